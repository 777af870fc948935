internal import COpenSSL

/// An RSA public key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256) verification.
///
/// Wraps an owned `EVP_PKEY`; immutable, so one instance is shared by every worker thread.
package struct RSAPublicKey: Sendable {
    let key: EVPKey

    init(key: EVPKey) { self.key = key }

    /// Builds the key from its JWK members (RFC 7518 §6.3.1): `n` and `e`, base64url big-endian.
    /// - Throws: `OpenSSLError(.invalidKey)` for bad encodings or parameters OpenSSL refuses.
    package init(modulus n: String, exponent e: String) throws {
        guard let modulus = Base64URL.decode(n), let exponent = Base64URL.decode(e) else {
            throw OpenSSLError(.invalidKey, reason: "JWK n or e is not strict base64url")
        }
        try self.init(modulus: modulus, exponent: exponent)
    }

    /// Builds the key from the big-endian modulus and public exponent.
    package init(modulus: [UInt8], exponent: [UInt8]) throws {
        // A leading zero is allowed by neither RFC 7518 nor a canonical encoding, but harmless; an
        // empty or zero value is not a key.
        guard modulus.contains(where: { $0 != 0 }), exponent.contains(where: { $0 != 0 }) else {
            throw OpenSSLError(.invalidKey, reason: "empty RSA modulus or exponent")
        }
        key = try EVPKey.fromParameters(
            type: "RSA",
            [.bigNumber(OSSL_PKEY_PARAM_RSA_N, modulus), .bigNumber(OSSL_PKEY_PARAM_RSA_E, exponent)],
            includesPrivate: false)
    }

    /// Reads a `PUBLIC KEY` PEM.
    package init(pem: String) throws {
        let key = try EVPKey.fromPEM(pem, isPrivate: false)
        guard key.isA("RSA") else { throw OpenSSLError(.invalidKey, reason: "PEM key is not RSA") }
        self.key = key
    }

    /// The modulus size in bits.
    package var bitCount: Int { key.bits }

    /// The modulus, big-endian, without leading zeros.
    package var modulus: [UInt8] { key.bigNumber(OSSL_PKEY_PARAM_RSA_N) ?? [] }

    /// The public exponent, big-endian.
    package var exponent: [UInt8] { key.bigNumber(OSSL_PKEY_PARAM_RSA_E) ?? [] }

    /// The key as a SubjectPublicKeyInfo `PUBLIC KEY` PEM.
    package func pem() throws -> String { try key.pem(isPrivate: false) }

    /// Whether `signature` is a valid RS256 signature of `message`.
    ///
    /// RFC 8017 §8.2.2 requires the signature to be exactly as long as the modulus; longer or
    /// shorter ones (a leading zero added or dropped) are refused before OpenSSL sees them.
    package func isValidSignature<Signature: Collection<UInt8>, Message: Collection<UInt8>>(
        _ signature: Signature, for message: Message
    ) -> Bool {
        guard signature.count == Int(EVP_PKEY_get_size(key.pointer)) else { return false }
        return withBytes(signature) { signature in
            withBytes(message) { message in key.verifySHA256(signature: signature, message: message) }
        }
    }
}
