internal import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's `RAND_bytes`.
package enum SecureRandom {
    /// `count` random bytes.
    /// - Throws: `OpenSSLError(.operationFailed)` if the generator is not seeded.
    package static func bytes(count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        ERR_clear_error()
        guard RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "RAND_bytes")
        }
        return bytes
    }
}
