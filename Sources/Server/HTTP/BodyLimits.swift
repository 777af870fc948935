import JOSE
package import StrictJSON
import SyncRules

/// What a route accepts in a request body: its size in bytes, and the shape of its JSON. The one
/// place these numbers live in the server, named by each `Route`; `nginx/siwa-locations.conf`
/// refuses the same sizes before a body reaches siwa, and `docs/openapi.yaml` states them for
/// clients (`RouteAgreementTests` compares nginx's with the routes').
///
/// Every body reader runs in time linear in its input; the limits keep each request's cost to
/// what its route can legitimately need.
package struct BodyLimits: Sendable, Equatable {
    /// The largest body, in bytes (413 above); `SIWA_MAX_BODY_BYTES` caps every route's.
    package let bytes: Int
    /// Depth, members per object, elements per array and string length of a JSON body (400 above).
    package let json: JSONLimits

    /// `/auth/*` and `/internal/*`, and any route that names no other: a sign-in is the largest, an
    /// identity token of up to 16,384 characters with a nonce, a code and a name. The shape's
    /// limits leave room for the members a client may add that the document does not name (they
    /// are ignored): bodies of any shape stay linear to read, so these only cap a request's size.
    package static let auth = BodyLimits(
        bytes: 32 * 1024, json: JSONLimits(depth: 16, members: 256, elements: 256, stringBytes: 16 * 1024, numberBytes: 1024))

    /// `POST /webhook/apple`: `{"payload": …}`, a JWS of up to 16,384 characters.
    package static let webhook = BodyLimits(
        bytes: 64 * 1024, json: JSONLimits(depth: 16, members: 256, elements: 256, stringBytes: 16 * 1024, numberBytes: 1024))

    /// `POST /sync`: up to `SyncLimits.maximumItems` lessons and as many achievements; no byte
    /// limit of its own but `SIWA_MAX_BODY_BYTES` (1 MiB by default).
    package static let sync = BodyLimits(
        bytes: .max,
        json: JSONLimits(depth: 16, members: 256, elements: SyncLimits.maximumItems, stringBytes: 16 * 1024, numberBytes: 1024))
}
