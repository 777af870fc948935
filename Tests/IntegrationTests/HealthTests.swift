import FastCGI
import Identity
import Logging
import MariaDB
import Server
import SiwaConfig
import Testing

@Suite struct HealthTests {
    @Test("Health answers 200 with the database reachable and 503 when no connection can be made")
    func health() throws {
        try withDatabase { database in
            var config = AppConfig(database: database.configuration)
            let worker = Application(config: config, logger: Logger(label: "test")).makeWorker(index: 0)
            defer { worker.close() }
            let ok = worker.respond(to: Request(method: "GET", path: "/health"))
            #expect(ok.status == 200)
            #expect(String(decoding: ok.body, as: UTF8.self) == #"{"appleKeys":"not_configured","database":"ok","status":"degraded"}"#)
            // A wrong password makes every reconnect fail, like a server that is down.
            var broken = database.configuration
            broken.password = "wrong"
            config.database = broken
            let failing = Application(config: config, logger: Logger(label: "test")).makeWorker(index: 1)
            defer { failing.close() }
            let down = failing.respond(to: Request(method: "GET", path: "/health"))
            #expect(down.status == 503)
            #expect(String(decoding: down.body, as: UTF8.self) == #"{"appleKeys":"not_configured","database":"down","status":"degraded"}"#)
        }
    }
}
