import FastCGI
import Foundation
import HTTPClient
import JOSE
import StrictJSON

/// Server-to-server notifications (docs/APPLE-PROTOCOL.md §7): `POST /admin/notifications` signs one and posts
/// `{"payload": "<JWS>"}` to the configured URL.
extension Emulator {
    /// Event types Apple sends; others can be sent too, to test how unknown types are handled.
    static let eventTypes = ["consent-revoked", "account-delete", "account-deleted", "email-disabled", "email-enabled"]

    private struct NotificationOrder: Decodable {
        var type: String
        var userId: String
        /// The app the event is for (`aud`); the first configured client by default.
        var clientId: String?
        /// Sends `events` as a JSON object, as Apple's documentation shows, instead of the JSON
        /// string real notifications carry.
        var eventsAsObject: Bool?
        /// `event_time` in seconds, as the documentation shows, instead of the observed milliseconds.
        var eventTimeInSeconds: Bool?
        /// False returns the payload without sending it.
        var deliver: Bool?
    }

    func sendNotification(_ request: Request) throws -> Response {
        let order: NotificationOrder
        do {
            order = try JSONDecoder().decode(NotificationOrder.self, from: Data(request.body))
        } catch {
            throw AdminError(
                400, "invalid_request", "expected {type, userId, clientId?, eventsAsObject?, eventTimeInSeconds?, deliver?}: \(error)")
        }
        guard !order.type.isEmpty, order.type.utf8.count <= 64 else { throw AdminError(400, "invalid_request", "type: 1 to 64 characters") }
        let clientID = order.clientId ?? configuration.clients[0].id
        guard configuration.client(clientID) != nil else { throw AdminError(400, "invalid_request", "unknown clientId \(clientID)") }
        // A deleted Apple Account is still notified about, by the sub it had.
        let (sub, relay) = store.read { state -> (String, String?) in
            let owner = self.team(of: clientID, in: state)
            return (
                AppleFormats.sub(teamID: owner, userID: order.userId),
                self.relayAddress(of: order.userId, clientID: clientID, team: owner, in: state)
            )
        }
        let now = clock()
        let jti = try AppleFormats.notificationID()
        let eventTime = order.eventTimeInSeconds == true ? now : now * 1000 + Int64.random(in: 0..<1000)
        let isEmailEvent = order.type.hasPrefix("email-")
        let events = JSONText.object([
            ("type", .string(order.type)), ("sub", .string(sub)), ("event_time", .integer(eventTime)),
            ("email", isEmailEvent ? .string(relay ?? "") : nil), ("is_private_email", isEmailEvent ? .string("true") : nil),
        ])
        let claims = JSONText.object([
            ("iss", .string(AppleFormats.issuer)), ("aud", .string(clientID)), ("exp", .integer(now + 86_400)),
            ("iat", .integer(now)), ("jti", .string(jti)),
            ("events", order.eventsAsObject == true ? .raw(events) : .string(events)),
        ])
        let payload = try currentKey.sign(claims: claims)
        var deliveredStatus: Int64?
        var deliveryError: String?
        if order.deliver ?? true {
            guard let url = configuration.notificationURL else {
                throw AdminError(409, "conflict", "no notificationURL is configured; pass deliver: false to get the payload")
            }
            let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 3, timeout: 10, caFile: configuration.caFile))
            let body = JSONText.object([("payload", .string(payload))])
            do {
                let response = try client.send(
                    HTTPRequest(
                        method: "POST", url: url, headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
                deliveredStatus = Int64(response.status)
            } catch {
                deliveryError = "\(error)"
            }
        }
        return Response(
            status: 200, headers: [("Cache-Control", "no-store")],
            body: Array(
                JSONText.object([
                    ("jti", .string(jti)), ("sub", .string(sub)), ("payload", .string(payload)),
                    ("deliveredStatus", deliveredStatus.map { .integer($0) }), ("deliveryError", deliveryError.map { .string($0) }),
                ]).utf8))
    }
}
