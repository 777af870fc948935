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

enum P256Curve {
    /// Returns `key` if it is an EC key on P-256 (OpenSSL calls the curve `prime256v1`).
    static func checked(_ key: EVPKey) throws -> EVPKey {
        guard key.isA("EC"), let group = key.text(OSSL_PKEY_PARAM_GROUP_NAME),
            group == "prime256v1" || group == "P-256"
        else { throw OpenSSLError(.invalidKey, reason: "key is not on the P-256 curve") }
        return key
    }
}

/// Conversions between the JOSE form of an ECDSA P-256 signature (R || S, 64 bytes) and DER.
package enum ECDSASignature {
    /// DER for a 64-byte R || S, or nil if the length is not exactly 64.
    package static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let r = BN_bin2bn(raw, 32, nil) else { return nil }
        guard let s = raw.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + 32, 32, nil) }) else {
            BN_free(r)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of r and s on success.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { return nil }
        defer { COpenSSL_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// R || S (32 bytes each) for a DER signature, or nil if it does not parse or a value is too long.
    package static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                ERR_clear_error()
                return nil
            }
            defer { ECDSA_SIG_free(signature) }
            // get0: borrowed, freed with the signature.
            guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else { return nil }
            var raw = [UInt8](repeating: 0, count: 64)
            let ok = raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
            return ok ? raw : nil
        }
    }
}
