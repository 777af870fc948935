import Foundation
package import JOSE

/// One of Apple's token-signing keys, from `GET /auth/keys`.
package struct AppleKey: Sendable {
    package let keyID: String
    /// The key's `alg` member, if Apple sent one (always `RS256` so far).
    package let algorithm: String?
    package let publicKey: RSAPublicKey

    package init(keyID: String, algorithm: String?, publicKey: RSAPublicKey) {
        self.keyID = keyID
        self.algorithm = algorithm
        self.publicKey = publicKey
    }
}

/// Parsing of a JWK Set (RFC 7517 §5) as Apple serves it.
package enum AppleKeySet {
    private struct Document: Decodable {
        let keys: [Member]
    }

    private struct Member: Decodable {
        let kty: String?
        let kid: String?
        let use: String?
        let alg: String?
        let n: String?
        let e: String?
    }

    /// The RSA signature keys in a JWK Set, in any order.
    ///
    /// Keys that are not RSA, are marked for another use than `sig`, have no `kid`, or whose
    /// `n`/`e` do not form a key are skipped (a key set may legitimately hold kinds we do not
    /// use); the `alg` is kept so the verifier can refuse a key meant for another algorithm.
    /// - Throws: `SignInError(.keysUnavailable)` if the document is not a JWK Set.
    package static func parse(_ data: [UInt8]) throws -> [AppleKey] {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(data))
        } catch {
            throw SignInError(.keysUnavailable, "the key set is not a JWK Set")
        }
        return document.keys.compactMap { member in
            guard member.kty == "RSA", member.use == nil || member.use == "sig",
                let kid = member.kid, !kid.isEmpty, let n = member.n, let e = member.e,
                let key = try? RSAPublicKey(modulus: n, exponent: e)
            else { return nil }
            return AppleKey(keyID: kid, algorithm: member.alg, publicKey: key)
        }
    }
}

/// Where a verifier gets Apple's keys: the shared cache in production, a fixed set in tests.
package protocol AppleKeySource: Sendable {
    /// The key with this `kid`.
    /// - Throws: `SignInError(.unknownKeyID)` or `SignInError(.keysUnavailable)`.
    func key(for keyID: String) throws -> AppleKey
    /// The state of the keys, for `/health`; never fetches.
    var health: AppleKeyCache.Health { get }
    /// Joins any thread of the source's own; called once the process is stopping.
    func stop()
}

extension AppleKeySource {
    /// A source without threads has nothing to stop.
    package func stop() {}
}

/// A fixed key set: for tests, and for `siwa verify-token --jwks FILE`.
package struct StaticAppleKeys: AppleKeySource {
    private let keys: [String: AppleKey]

    package init(_ keys: [AppleKey]) {
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    package func key(for keyID: String) throws -> AppleKey {
        guard let key = keys[keyID] else { throw SignInError(.unknownKeyID, "no key with this kid in the key set") }
        return key
    }

    package var health: AppleKeyCache.Health { keys.isEmpty ? .unavailable : .fresh }
}
