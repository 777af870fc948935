import JOSE
import StrictJSON

/// The signature algorithms of our access tokens. ES256 is the default: a P-256 signature costs
/// about a fifteenth of an RSA-2048 one, and every sign-in and refresh makes one.
package enum AccessTokenAlgorithm: String, Sendable, CaseIterable {
    case es256 = "ES256"
    case rs256 = "RS256"
}

/// One signing key of our access tokens: its `kid` (the file name) and the private key.
package struct AccessTokenKey: Sendable {
    enum Material: Sendable {
        case p256(P256PrivateKey, P256PublicKey)
        case rsa(RSAPrivateKey, RSAPublicKey)
    }

    package let keyID: String
    let material: Material

    /// The algorithm the key signs with, following its type.
    package var algorithm: AccessTokenAlgorithm {
        switch material {
        case .p256: .es256
        case .rsa: .rs256
        }
    }

    /// Reads a private key PEM: a P-256 key (ES256) or an RSA key of 2048 bits or more (RS256).
    /// - Returns: nil when the text holds neither.
    init?(keyID: String, pem: String) {
        self.keyID = keyID
        if let key = try? P256PrivateKey(pem: pem) {
            material = .p256(key, key.publicKey)
        } else if let key = try? RSAPrivateKey(pem: pem), key.publicKey.bitCount >= 2048 {
            material = .rsa(key, key.publicKey)
        } else {
            return nil
        }
    }

    /// A new private key of `algorithm`, as a PEM.
    static func generatePEM(_ algorithm: AccessTokenAlgorithm) throws -> String {
        switch algorithm {
        case .es256: try P256PrivateKey().pem()
        case .rs256: try RSAPrivateKey(bits: 2048).pem()
        }
    }

    func signature(for input: [UInt8]) throws -> [UInt8] {
        switch material {
        case .p256(let key, _): try key.signature(for: input)
        case .rsa(let key, _): try key.signature(for: input)
        }
    }

    func isValidSignature(_ signature: [UInt8], for input: [UInt8]) -> Bool {
        switch material {
        case .p256(_, let key): key.isValidSignature(signature, for: input)
        case .rsa(_, let key): key.isValidSignature(signature, for: input)
        }
    }

    /// The public key as a JWK (RFC 7517, 7518 §6).
    var jwk: String {
        var members: [(String, JSONText.Value?)] = []
        switch material {
        case .p256(_, let key):
            let point = key.uncompressedPoint
            members = [
                ("kty", .string("EC")), ("crv", .string("P-256")),
                ("x", .string(Base64URL.encode(point[1..<33]))), ("y", .string(Base64URL.encode(point[33..<65]))),
            ]
        case .rsa(_, let key):
            members = [
                ("kty", .string("RSA")), ("n", .string(Base64URL.encode(key.modulus))),
                ("e", .string(Base64URL.encode(key.exponent))),
            ]
        }
        members += [("kid", .string(keyID)), ("use", .string("sig")), ("alg", .string(algorithm.rawValue))]
        return JSONText.object(members)
    }
}
