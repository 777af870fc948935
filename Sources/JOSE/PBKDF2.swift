internal import COpenSSL

/// PBKDF2 with HMAC-SHA256 (RFC 8018 §5.2) through OpenSSL's `PKCS5_PBKDF2_HMAC`: a key from a
/// passphrase, for what an operator seals with one (a backup's key material).
package enum PBKDF2 {
    /// The iterations for a passphrase-derived key: OWASP's figure for PBKDF2-HMAC-SHA256 (2023),
    /// about 0.3 s here, once per backup and per restore.
    package static let recommendedIterations = 600_000

    /// A `length`-byte key derived from `password` and `salt` with `iterations` rounds of
    /// HMAC-SHA256.
    package static func sha256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = 32) throws -> [UInt8] {
        precondition(iterations > 0 && iterations <= Int(Int32.max) && length > 0, "PBKDF2 needs positive iterations and length")
        ERR_clear_error()
        var key = [UInt8](repeating: 0, count: length)
        let ok = password.withUnsafeBufferPointer { password in
            password.withMemoryRebound(to: CChar.self) { password in
                PKCS5_PBKDF2_HMAC(
                    password.baseAddress, Int32(password.count), salt, Int32(salt.count), Int32(iterations), EVP_sha256(),
                    Int32(length), &key)
            }
        }
        guard ok == 1 else { throw OpenSSLError.drainingQueue(.operationFailed, reason: "PKCS5_PBKDF2_HMAC") }
        return key
    }
}
