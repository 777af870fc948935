internal import COpenSSL

/// A P-256 public key for ES256 (ECDSA with SHA-256) verification.
package struct P256PublicKey: Sendable {
    let key: EVPKey

    init(key: EVPKey) { self.key = key }

    /// Builds the key from its JWK coordinates (RFC 7518 §6.2.1): `x` and `y`, 32 bytes each, base64url.
    /// - Throws: `OpenSSLError(.invalidKey)` if they are not a point on the curve.
    package init(x: String, y: String) throws {
        guard let x = Base64URL.decode(x), let y = Base64URL.decode(y), x.count == 32, y.count == 32 else {
            throw OpenSSLError(.invalidKey, reason: "JWK x and y must be 32 bytes of base64url each")
        }
        try self.init(uncompressedPoint: [0x04] + x + y)
    }

    /// Builds the key from an uncompressed SEC 1 point (`04 || x || y`).
    package init(uncompressedPoint: [UInt8]) throws {
        guard uncompressedPoint.count == 65, uncompressedPoint.first == 0x04 else {
            throw OpenSSLError(.invalidKey, reason: "an uncompressed P-256 point is 65 bytes starting with 04")
        }
        key = try EVPKey.fromParameters(
            type: "EC",
            [.text(OSSL_PKEY_PARAM_GROUP_NAME, "P-256"), .octets(OSSL_PKEY_PARAM_PUB_KEY, uncompressedPoint)],
            includesPrivate: false)
    }

    /// Reads a `PUBLIC KEY` PEM holding a P-256 key.
    package init(pem: String) throws {
        key = try P256Curve.checked(EVPKey.fromPEM(pem, isPrivate: false))
    }

    /// The key as a SubjectPublicKeyInfo `PUBLIC KEY` PEM.
    package func pem() throws -> String { try key.pem(isPrivate: false) }

    /// The uncompressed point `04 || x || y`.
    package var uncompressedPoint: [UInt8] { key.octets(OSSL_PKEY_PARAM_PUB_KEY, capacity: 65) ?? [] }

    /// Whether `signature`, in the JOSE form (RFC 7518 §3.4: R and S as 32 bytes each), is a valid
    /// ES256 signature of `message`. High-S signatures are valid (RFC 7515 A.3 has one).
    package func isValidSignature<Signature: Collection<UInt8>, Message: Collection<UInt8>>(
        _ signature: Signature, for message: Message
    ) -> Bool {
        guard let der = ECDSASignature.der(fromRaw: Array(signature)) else { return false }
        return isValidSignature(der: der, for: message)
    }

    /// Whether `der`, an ASN.1 DER `ECDSA-Sig-Value`, is a valid signature of `message` with SHA-256.
    package func isValidSignature<Message: Collection<UInt8>>(der: [UInt8], for message: Message) -> Bool {
        der.withUnsafeBytes { signature in
            withBytes(message) { message in key.verifySHA256(signature: signature, message: message) }
        }
    }
}

enum P256Curve {
    /// Returns `key` if it is an EC key on P-256 (OpenSSL calls the curve `prime256v1`).
    static func checked(_ key: EVPKey) throws -> EVPKey {
        guard key.isA("EC"), let group = key.text(OSSL_PKEY_PARAM_GROUP_NAME),
            group == "prime256v1" || group == "P-256"
        else { throw OpenSSLError(.invalidKey, reason: "key is not on the P-256 curve") }
        return key
    }
}
