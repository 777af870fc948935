package import FastCGI
package import Identity
import JOSE
import StrictJSON

/// `POST /webhook/apple`: Apple's server-to-server notifications. 200 when processed, duplicate,
/// ignored or for an unknown user; 400 for a malformed body; 401 for a bad signature or claims.
package enum AppleNotificationRoutes {
    struct Body: Decodable {
        var payload: String
    }

    package static func handle(_ request: Request, _ parameters: [String: String], _ useCases: UseCases) throws -> Response {
        let body = try request.decodeJSON(Body.self)
        let outcome = try useCases.appleNotifications.handleNotification(
            payload: try limited(body.payload, "payload", maximum: 16_384) ?? "")
        let answer = JSONText.object([("status", .string(outcome.rawValue))])
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(answer.utf8))
    }
}
