package import FastCGI
package import Identity
import JOSE
import StrictJSON

/// `GET /health`: whether this worker can reach the database, and the state of Apple's keys.
///
/// The database check is a ping on the worker's own connection, so a restarted database is
/// noticed (and reconnected) by the first health check after it is back. `appleKeys` is `ok`
/// (fresh), `stale` (past their lifetime, not fetched again yet), `fetch_failing` (cached keys
/// still served, but the latest fetch failed: a token signed with a new key cannot be verified),
/// `unavailable` (none fetched yet) or `not_configured`.
package enum HealthRoute {
    /// The route.
    package static let routes = [Route("GET", "/health", handle)]

    package static func handle(_ request: Request, _ context: RouteContext, _ useCases: UseCases) -> Response {
        let (databaseUp, keys, node) = useCases.status.health()
        let healthy = databaseUp && (keys == "ok" || keys == "stale")
        // fetch_failing is degraded: a new Apple key would refuse every sign-in.
        let nodeMember = node.map { #","databaseNode":\#(JSONText.quoted($0))"# } ?? ""
        let body =
            #"{"appleKeys":"\#(keys)","database":"\#(databaseUp ? "ok" : "down")"\#(nodeMember),"status":"\#(healthy ? "ok" : "degraded")"}"#
        // Only a dead database makes the worker unable to serve anything: 503. Without Apple's keys
        // sign-ins fail but sessions and sync still work, so the status says degraded with 200.
        return Response(status: databaseUp ? 200 : 503, headers: [("Cache-Control", "no-store")], body: Array(body.utf8))
    }
}
