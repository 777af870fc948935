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

/// An RSA private key for RS256 signing (our own access tokens, the emulator's identity tokens).
package struct RSAPrivateKey: Sendable {
    let key: EVPKey

    /// Generates a new key.
    /// - Parameter bits: the modulus size; 2048 or more.
    package init(bits: Int = 2048) throws {
        precondition(bits >= 2048, "RSA keys under 2048 bits are not made")
        key = try EVPKey.generate(type: "RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) }
    }

    /// Reads a PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY` PEM.
    package init(pem: String) throws {
        let key = try EVPKey.fromPEM(pem, isPrivate: true)
        guard key.isA("RSA") else { throw OpenSSLError(.invalidKey, reason: "PEM key is not RSA") }
        self.key = key
    }

    /// Builds the key from the JWK private members (RFC 7518 §6.3.2), all base64url.
    package init(jwk members: [String: String]) throws {
        // The CRT names are concatenated string macros, which Swift does not import.
        let names: [(String, String)] = [
            ("n", OSSL_PKEY_PARAM_RSA_N), ("e", OSSL_PKEY_PARAM_RSA_E), ("d", OSSL_PKEY_PARAM_RSA_D),
            ("p", "rsa-factor1"), ("q", "rsa-factor2"),
            ("dp", "rsa-exponent1"), ("dq", "rsa-exponent2"), ("qi", "rsa-coefficient1"),
        ]
        var parameters: [EVPKey.Parameter] = []
        for (member, parameter) in names {
            guard let text = members[member], let bytes = Base64URL.decode(text) else {
                throw OpenSSLError(.invalidKey, reason: "JWK member \(member) missing or not base64url")
            }
            parameters.append(.bigNumber(parameter, bytes))
        }
        key = try EVPKey.fromParameters(type: "RSA", parameters, includesPrivate: true)
    }

    /// The matching public key.
    package var publicKey: RSAPublicKey { RSAPublicKey(key: key) }

    /// The key as a PKCS#8 `PRIVATE KEY` PEM.
    package func pem() throws -> String { try key.pem(isPrivate: true) }

    /// The RS256 signature of `message` (deterministic: PKCS#1 v1.5).
    package func signature<Message: Collection<UInt8>>(for message: Message) throws -> [UInt8] {
        try withBytes(message) { try key.signSHA256(message: $0) }
    }
}
