import FastCGI
import Foundation
import Identity
import Logging
import MariaDB
import SIWATestSupport
import Server
import SiwaConfig
import Testing
import Threads

/// A failure that is not client-facing: its details must stay out of the response.
private struct InternalFailure: Error, CustomStringConvertible {
    var description: String { "secret internal detail" }
}

@Suite struct WorkerTests {
    /// An application whose database cannot be reached (a socket that does not exist).
    static func application(
        domainAssociation: DomainAssociation? = nil, extraRoutes: @escaping (inout Router) -> Void = { _ in }
    ) throws -> Application {
        var config = AppConfig(database: MariaDB.Configuration(endpoint: .unixSocket(path: "/nonexistent/siwa-test.sock"), user: "siwa"))
        config.domainAssociation = domainAssociation
        return Application(config: config, logger: Logger(label: "test"), extraRoutes: extraRoutes)
    }

    static func routes(_ router: inout Router) {
        router.add("GET", "/boom") { _, _, _ in throw InternalFailure() }
        router.add("GET", "/teapot") { _, _, _ in throw HTTPError(418, "teapot", "I am a teapot") }
        router.add("GET", "/busy") { _, _, _ in throw HTTPError(429, "rate_limited", "Too many requests") }
        router.add("DELETE", "/items/{id}") { _, context, _ in
            Response(status: 200, body: Array((context.parameters["id"] ?? "").utf8))
        }
    }

    @Test("A handler that throws gives a generic JSON 500 without the error's details")
    func throwingHandler() throws {
        let worker = try Self.application(extraRoutes: Self.routes).makeWorker(index: 0)
        defer { worker.close() }
        let response = worker.respond(to: Request(method: "GET", path: "/boom"))
        #expect(response.status == 500)
        #expect(response.contentType == "application/json")
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(body == #"{"error":"internal_error","message":"The server failed to handle the request"}"#)
        #expect(!body.contains("secret"))
    }

    @Test("Client-facing errors keep their status and code; unknown paths get 404, wrong methods 405")
    func routing() throws {
        let worker = try Self.application(extraRoutes: Self.routes).makeWorker(index: 0)
        defer { worker.close() }
        let teapot = worker.respond(to: Request(method: "GET", path: "/teapot"))
        #expect(teapot.status == 418)
        #expect(String(decoding: teapot.body, as: UTF8.self) == #"{"error":"teapot","message":"I am a teapot"}"#)
        #expect(worker.respond(to: Request(method: "GET", path: "/nothing")).status == 404)
        let wrongMethod = worker.respond(to: Request(method: "GET", path: "/items/7"))
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers.contains { $0.name == "Allow" && $0.value == "DELETE" })
        let item = worker.respond(to: Request(method: "DELETE", path: "/items/7"))
        #expect(String(decoding: item.body, as: UTF8.self) == "7")
    }

    @Test("Two Authorization, Origin or Content-Type headers are refused with a JSON 400 before any route; one of each passes")
    func repeatedHeaders() throws {
        let worker = try Self.application(extraRoutes: Self.routes).makeWorker(index: 0)
        defer { worker.close() }
        let one = [("authorization", "Bearer a"), ("origin", "https://site.example"), ("content-type", "application/json")]
        #expect(worker.respond(to: Request(method: "DELETE", path: "/items/1", headers: HTTPHeaders(one))).status == 200)
        for (name, value) in one {
            let response = worker.respond(to: Request(method: "DELETE", path: "/items/1", headers: HTTPHeaders(one + [(name, value)])))
            #expect(response.status == 400, "\(name)")
            #expect(response.contentType == "application/json")
            #expect(String(decoding: response.body, as: UTF8.self).contains(#""error":"invalid_request""#), "\(name)")
        }
    }

    @Test("The web sign-in's browser routes answer errors as pages; /auth/web/settings, which the page fetches, as JSON")
    func pagesOrJSON() throws {
        let worker = try Self.application().makeWorker(index: 0)
        defer { worker.close() }
        let settings = worker.respond(to: Request(method: "POST", path: "/auth/web/settings"))
        #expect(settings.status == 405 && settings.contentType == "application/json")
        let start = worker.respond(to: Request(method: "POST", path: "/auth/web/start"))
        #expect(start.status == 405 && start.contentType.hasPrefix("text/html"))
    }

    @Test("Apple's domain-association file is served as configured, as plain text; without one its path is a JSON 404")
    func domainAssociation() throws {
        let path = "/.well-known/apple-developer-domain-association.txt"
        let none = try Self.application().makeWorker(index: 0)
        defer { none.close() }
        let missing = none.respond(to: Request(method: "GET", path: path))
        #expect(missing.status == 404 && missing.contentType == "application/json")
        let file = DomainAssociation(path: "/etc/siwa/apple-developer-domain-association.txt", contents: Array("from Apple\n".utf8))
        let configured = try Self.application(domainAssociation: file).makeWorker(index: 0)
        defer { configured.close() }
        let served = configured.respond(to: Request(method: "GET", path: path))
        #expect(served.status == 200 && served.contentType.hasPrefix("text/plain") && served.body == file.contents)
    }

    @Test("A body over its route's limit is refused with 413 before the handler: 32 KiB on /auth/, SIWA_MAX_BODY_BYTES on /sync")
    func bodyLimitPerRoute() throws {
        let worker = try Self.application().makeWorker(index: 0)
        defer { worker.close() }
        let json = HTTPHeaders([("content-type", "application/json")])
        let tooLarge = worker.respond(
            to: Request(method: "POST", path: "/auth/refresh", headers: json, body: [UInt8](repeating: 0x20, count: 32 * 1024 + 1)))
        #expect(tooLarge.status == 413)
        #expect(String(decoding: tooLarge.body, as: UTF8.self).contains(#""error":"payload_too_large""#))
        // Within its limit the body reaches the route, which reads it (whitespace is no object).
        let read = worker.respond(
            to: Request(method: "POST", path: "/auth/refresh", headers: json, body: [UInt8](repeating: 0x20, count: 32 * 1024)))
        #expect(read.status == 400)
        let sync = worker.respond(
            to: Request(method: "POST", path: "/sync", headers: json, body: [UInt8](repeating: 0x20, count: 64 * 1024)))
        #expect(sync.status != 413, "a sync body may be larger")
    }

    @Test("A 429 or 503 says when to retry")
    func retryAfter() throws {
        let worker = try Self.application(extraRoutes: Self.routes).makeWorker(index: 0)
        defer { worker.close() }
        let busy = worker.respond(to: Request(method: "GET", path: "/busy"))
        #expect(busy.status == 429 && busy.headers.contains { $0.name == "Retry-After" && $0.value == "5" })
        let teapot = worker.respond(to: Request(method: "GET", path: "/teapot"))
        #expect(!teapot.headers.contains { $0.name == "Retry-After" })
    }

    @Test("HEAD is answered by the GET route of the path, /health included; Allow names HEAD with GET")
    func head() throws {
        let worker = try Self.application(extraRoutes: Self.routes).makeWorker(index: 0)
        defer { worker.close() }
        #expect(worker.respond(to: Request(method: "HEAD", path: "/teapot")).status == 418)
        #expect(worker.respond(to: Request(method: "HEAD", path: "/health")).status == 503, "the database is down here")
        let wrongMethod = worker.respond(to: Request(method: "POST", path: "/health"))
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers.contains { $0.name == "Allow" && $0.value == "GET, HEAD" }, "\(wrongMethod.headers)")
    }

    @Test("Health answers 503 degraded while the database is unreachable")
    func healthWithoutDatabase() throws {
        let worker = try Self.application().makeWorker(index: 0)
        defer { worker.close() }
        let response = worker.respond(to: Request(method: "GET", path: "/health"))
        #expect(response.status == 503)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"appleKeys":"not_configured","database":"down","status":"degraded"}"#)
    }

    @Test("Through FastCGI, the only worker keeps serving after a handler threw; bodies over the limit get JSON 413")
    func keepsServingOverFastCGI() throws {
        let application = try Self.application(extraRoutes: Self.routes)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("srv-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        initializeFastCGI()
        let listener = try Listener(path: directory + "/siwa.sock", mode: 0o600, backlog: 16)
        var pool = application.workerPoolConfiguration
        pool.threads = 1
        pool.maxBodyBytes = 2048
        let workers = WorkerPool(listener: listener, configuration: pool) { application.makeWorker(index: $0) }
        let thread = try OwnedThread(name: "test-pool") { _ in try? workers.run() }
        defer {
            listener.shutdown()
            thread.join()
        }
        let client = FastCGIClient(socketPath: directory + "/siwa.sock")
        #expect(try client.send(method: "GET", uri: "/boom").status == 500)
        #expect(try client.send(method: "GET", uri: "/boom").status == 500)
        #expect(try client.send(method: "DELETE", uri: "/items/9").text == "9")
        let tooLarge = try client.send(method: "POST", uri: "/items/9", body: [UInt8](repeating: 1, count: 4096))
        #expect(tooLarge.status == 413)
        #expect(tooLarge.text == #"{"error":"payload_too_large","message":"The request body is too large"}"#)
    }
}
