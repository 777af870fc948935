package import FastCGI
package import Identity
import JOSE
package import SiwaConfig
import StrictJSON

extension PageSettings {
    /// The route of these settings.
    package var route: Route { Route("GET", "/auth/web/settings", handle) }

    /// `GET /auth/web/settings`: `{"appName": string or null, "showsProgress": bool}`, which browsers
    /// may keep five minutes.
    package func handle(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let name = appName.map { JSONText.quoted($0) } ?? "null"
        let body = JSONText.object([("appName", .raw(name)), ("showsProgress", .bool(showsProgress))])
        return Response(status: 200, headers: [("Cache-Control", "public, max-age=300")], body: Array(body.utf8))
    }
}
