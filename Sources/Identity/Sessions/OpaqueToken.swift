import JOSE

/// A new random secret (refresh token, cookie, state, handle): 256 bits, base64url, with its SHA-256.
/// Only the hash is ever stored.
package struct OpaqueToken: Sendable {
    package let value: String
    package let hash: [UInt8]

    package init() throws {
        value = Base64URL.encode(try SecureRandom.bytes(count: 32))
        hash = SHA256.hash(Array(value.utf8))
    }

    /// The SHA-256 under which a presented token is looked up; nil when it cannot be one of ours.
    package static func hash(of presented: String) -> [UInt8]? {
        guard presented.utf8.count == 43, Base64URL.decode(presented) != nil else { return nil }
        return SHA256.hash(Array(presented.utf8))
    }
}
