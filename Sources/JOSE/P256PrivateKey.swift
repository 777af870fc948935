internal import COpenSSL

/// A P-256 private key for ES256 signing: Apple's `.p8` key for client secrets, and the emulator's keys.
package struct P256PrivateKey: Sendable {
    let key: EVPKey

    /// Generates a new key.
    package init() throws {
        key = try EVPKey.generate(type: "EC") { EVP_PKEY_CTX_set_group_name($0, "P-256") }
    }

    /// Reads a PKCS#8 `PRIVATE KEY` PEM (the format of Apple's `.p8` files) or a SEC 1 `EC PRIVATE KEY`.
    /// - Throws: `OpenSSLError(.invalidKey)` if the text holds no P-256 private key.
    package init(pem: String) throws {
        key = try P256Curve.checked(EVPKey.fromPEM(pem, isPrivate: true))
    }

    /// Builds the key from the JWK members `x`, `y` and `d` (RFC 7518 §6.2.2), base64url.
    package init(x: String, y: String, d: String) throws {
        guard let x = Base64URL.decode(x), let y = Base64URL.decode(y), let d = Base64URL.decode(d),
            x.count == 32, y.count == 32, d.count == 32
        else { throw OpenSSLError(.invalidKey, reason: "JWK x, y and d must be 32 bytes of base64url each") }
        key = try EVPKey.fromParameters(
            type: "EC",
            [
                .text(OSSL_PKEY_PARAM_GROUP_NAME, "P-256"), .octets(OSSL_PKEY_PARAM_PUB_KEY, [0x04] + x + y),
                .bigNumber(OSSL_PKEY_PARAM_PRIV_KEY, d),
            ],
            includesPrivate: true)
    }

    /// The matching public key.
    package var publicKey: P256PublicKey { P256PublicKey(key: key) }

    /// The key as a PKCS#8 `PRIVATE KEY` PEM (the `.p8` format).
    package func pem() throws -> String { try key.pem(isPrivate: true) }

    /// The ES256 signature of `message` in the JOSE form: R and S, 32 bytes each.
    package func signature<Message: Collection<UInt8>>(for message: Message) throws -> [UInt8] {
        let der = try withBytes(message) { try key.signSHA256(message: $0) }
        guard let raw = ECDSASignature.raw(fromDER: der) else {
            throw OpenSSLError(.operationFailed, reason: "OpenSSL returned an ECDSA signature that does not parse")
        }
        return raw
    }
}
