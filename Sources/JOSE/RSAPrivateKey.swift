internal import COpenSSL

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
