package import FastCGI
import Logging
import MariaDB

/// `GET /health`: whether this worker can reach the database.
///
/// The database check is a ping (COM_PING) on the worker's own connection, so a restarted
/// database is noticed (and reconnected) by the first health check after it is back.
package enum Health {
    // Static bodies: the health check is the hot path of the transport benchmark.
    private static let healthy = Array(#"{"database":"ok","status":"ok"}"#.utf8)
    private static let degraded = Array(#"{"database":"down","status":"degraded"}"#.utf8)

    package static func handle(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) -> Response {
        let headers = [("Cache-Control", "no-store")]
        do {
            try context.database.ping()
            return Response(status: 200, headers: headers, body: healthy)
        } catch {
            context.logger.warning("health check: database unavailable", metadata: ["error": "\(error)"])
            return Response(status: 503, headers: headers, body: degraded)
        }
    }
}
