package import FastCGI
package import Identity
import JOSE
import StrictJSON

/// `POST /webhook/apple`: Apple's server-to-server notifications. 200 when processed, duplicate,
/// ignored or for an unknown user; 400 for a malformed body; 401 for a bad signature or claims.
package enum AppleNotificationRoutes {
    /// The route: Apple signs its notification, so anyone may send one (64 KiB at most).
    package static let routes = [Route("POST", "/webhook/apple", bodyLimits: .webhook, handle)]

    struct Body: Decodable {
        var payload: String
    }

    package static func handle(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let body = try request.decodeJSON(Body.self, limits: context.bodyLimits)
        let outcome = try useCases.appleNotifications.handleNotification(
            payload: try limited(body.payload, "payload", maximum: 16_384) ?? "")
        let answer = JSONText.object([("status", .string(outcome.rawValue))])
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(answer.utf8))
    }
}
