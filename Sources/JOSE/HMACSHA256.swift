internal import COpenSSL

/// HMAC-SHA256 through OpenSSL's one-shot `EVP_Q_mac`, for the signatures of outgoing webhooks.
package enum HMACSHA256 {
    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    package static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length = 0
        // A zero-length key is valid HMAC; OpenSSL wants a non-null pointer for it.
        let keyBytes = key.isEmpty ? [0] : key
        let ok = keyBytes.withUnsafeBytes { keyBuffer in
            message.withUnsafeBytes { messageBuffer in
                EVP_Q_mac(
                    nil, "HMAC", nil, "SHA256", nil, keyBuffer.baseAddress, key.count, messageBuffer.baseAddress, message.count, &code,
                    code.count, &length)
            }
        }
        // With the default provider, HMAC-SHA256 only fails on allocation failure.
        precondition(ok != nil && length == 32, "EVP_Q_mac(HMAC-SHA256) failed")
        return code
    }
}
