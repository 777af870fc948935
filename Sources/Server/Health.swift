import AppleID
package import FastCGI
import Logging
import MariaDB

/// `GET /health`: whether this worker can reach the database, and the state of Apple's keys.
///
/// The database check is a ping (COM_PING) on the worker's own connection, so a restarted
/// database is noticed (and reconnected) by the first health check after it is back.
/// `appleKeys` is `ok` (fresh), `stale` (served while Apple is unreachable), `unavailable`
/// (none fetched yet) or `not_configured`.
package enum Health {
    package static func handle(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) -> Response {
        let headers = [("Cache-Control", "no-store")]
        // Never fetches: a health check must not make calls to Apple.
        let keys = context.apple.map { $0.keys.status.health.rawValue } ?? "not_configured"
        var databaseUp = true
        do {
            try context.database.ping()
        } catch {
            databaseUp = false
            context.logger.warning("health check: database unavailable", metadata: ["error": "\(error)"])
        }
        let healthy = databaseUp && (keys == "ok" || keys == "stale")
        let body = #"{"appleKeys":"\#(keys)","database":"\#(databaseUp ? "ok" : "down")","status":"\#(healthy ? "ok" : "degraded")"}"#
        // Only a dead database makes the worker unable to serve anything: 503. Without Apple's keys
        // sign-ins fail but sessions and sync still work, so the status says degraded with 200.
        return Response(status: databaseUp ? 200 : 503, headers: headers, body: Array(body.utf8))
    }
}
