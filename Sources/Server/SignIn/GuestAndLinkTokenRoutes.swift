package import FastCGI
import Foundation
package import Identity
import JOSE
import StrictJSON

/// `POST /auth/guest` (a guest account, when turned on) and `POST /internal/link-tokens` (link
/// tokens for the app's older backend).
package enum GuestAndLinkTokenRoutes {
    /// The routes: a guest account for anyone, link tokens for the older backend only.
    package static let routes = [
        Route("POST", "/auth/guest", guest), Route("POST", "/internal/link-tokens", access: .linkSecret, linkToken),
    ]

    struct GuestBody: Decodable {
        var device: String?
    }

    /// Makes a guest account with its first session; the body (`{"device": ...}`) is optional.
    package static func guest(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let body = request.body.isEmpty ? GuestBody() : try request.decodeJSON(GuestBody.self, limits: context.bodyLimits)
        let device = try limited(body.device, "device", maximum: 512)
        let grant = try useCases.signIn.createGuest(device: device, remoteAddress: request.remoteAddress)
        return NativeSignInRoutes.tokenResponse(grant)
    }

    struct LinkTokenBody: Decodable {
        var externalId: String
    }

    /// Mints a link token for one of the older backend's users. Server to server only: the caller
    /// presents a link secret as a Bearer token, and a request a browser made (it carries `Origin`
    /// or a cookie) is refused whatever it presents (the route's access, `linkSecret`).
    package static func linkToken(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        guard let secret = try Caller.bearerToken(request) else {
            throw HTTPError(401, "invalid_link_secret", "A link secret (Authorization: Bearer) is required")
        }
        let body = try request.decodeJSON(LinkTokenBody.self, limits: context.bodyLimits)
        let externalID = try externalID(body.externalId)
        let token = try useCases.signIn.mintLinkToken(externalID: externalID, presentedSecret: secret)
        let json = JSONText.object([
            ("linkToken", .string(token.value)), ("externalId", .string(token.externalID)), ("expiresIn", .integer(Int64(token.expiresIn))),
        ])
        return Response(status: 201, headers: [("Cache-Control", "no-store")], body: Array(json.utf8))
    }

    /// An external id as the older backend gives it: 1 to 255 printable characters, no spaces
    /// around (compared byte for byte, so `42` and ` 42` would be two users).
    static func externalID(_ value: String) throws -> String {
        guard let value = try limited(value, "externalId", maximum: 255), !value.isEmpty,
            value.trimmingCharacters(in: .whitespaces) == value,
            !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw HTTPError.badRequest("`externalId` must be 1 to 255 characters, without control characters or spaces around it")
        }
        return value
    }
}
