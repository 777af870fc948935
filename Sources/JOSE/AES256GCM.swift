internal import COpenSSL

/// AES-256-GCM authenticated encryption (for Apple refresh tokens at rest).
///
/// A sealed box is `nonce (12 bytes) || ciphertext || tag (16 bytes)`; the nonce is random per seal.
/// Random 96-bit nonces are safe for far more than 2^32 seals per key (NIST SP 800-38D §8.3),
/// which a key id allows rotating long before.
package enum AES256GCM {
    package static let keySize = 32
    package static let nonceSize = 12
    package static let tagSize = 16

    /// Encrypts and authenticates `plaintext`, also authenticating `associatedData` (not encrypted).
    /// - Parameter key: 32 bytes.
    /// - Returns: the sealed box.
    package static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        precondition(key.count == keySize, "AES-256-GCM needs a 32-byte key")
        let nonce = try SecureRandom.bytes(count: nonceSize)
        return try withCipherContext { context in
            var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
            var tag = [UInt8](repeating: 0, count: tagSize)
            var length: Int32 = 0
            guard EVP_EncryptInit_ex2(context, EVP_aes_256_gcm(), key, nonce, nil) == 1,
                associatedData.isEmpty || EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
                plaintext.isEmpty || EVP_EncryptUpdate(context, &ciphertext, &length, plaintext, Int32(plaintext.count)) == 1,
                EVP_EncryptFinal_ex(context, &tag, &length) == 1,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagSize), &tag) == 1
            else { throw OpenSSLError.drainingQueue(.operationFailed, reason: "AES-256-GCM seal") }
            return nonce + ciphertext + tag
        }
    }

    /// Checks and decrypts a sealed box.
    /// - Returns: the plaintext, or nil if the box was altered, is too short, or the key or
    ///   associated data differ.
    package static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8]? {
        precondition(key.count == keySize, "AES-256-GCM needs a 32-byte key")
        guard box.count >= nonceSize + tagSize else { return nil }
        let nonce = Array(box[..<nonceSize])
        let ciphertext = Array(box[nonceSize..<(box.count - tagSize)])
        var tag = Array(box[(box.count - tagSize)...])
        return try withCipherContext { context in
            var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
            var length: Int32 = 0
            guard EVP_DecryptInit_ex2(context, EVP_aes_256_gcm(), key, nonce, nil) == 1,
                associatedData.isEmpty || EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
                ciphertext.isEmpty || EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagSize), &tag) == 1
            else { throw OpenSSLError.drainingQueue(.operationFailed, reason: "AES-256-GCM open") }
            var finalBytes = [UInt8](repeating: 0, count: 16)
            // The tag is checked here: anything but 1 means the box is not authentic.
            guard EVP_DecryptFinal_ex(context, &finalBytes, &length) == 1 else {
                ERR_clear_error()
                return nil
            }
            return plaintext
        }
    }

    private static func withCipherContext<Result>(_ body: (OpaquePointer) throws -> Result) throws -> Result {
        ERR_clear_error()
        guard let context = EVP_CIPHER_CTX_new() else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_CIPHER_CTX_new")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        return try body(context)
    }
}
