internal import COpenSSL

/// SHA-256 through OpenSSL's one-shot `EVP_Digest`.
package enum SHA256 {
    /// The SHA-256 implementation, fetched from the default provider once (`EVP_MD_fetch`) rather
    /// than looked up again by every call.
    /// `@unchecked Sendable`: a fetched `EVP_MD` is immutable and shared freely between threads.
    struct Algorithm: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    static let algorithm: Algorithm = {
        guard let pointer = EVP_MD_fetch(nil, "SHA256", nil) else {
            preconditionFailure("EVP_MD_fetch(SHA256) failed: the default provider is not available")
        }
        return Algorithm(pointer: pointer)
    }()

    /// A digest held inline, so hashing on a hot path allocates nothing.
    struct Digest {
        var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    }

    /// Hashes `bytes` into `digest`.
    static func hash(_ bytes: UnsafeRawBufferPointer, into digest: inout Digest) {
        var length: UInt32 = 0
        let ok = withUnsafeMutableBytes(of: &digest.bytes) { output in
            EVP_Digest(
                bytes.baseAddress, bytes.count, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                algorithm.pointer, nil)
        }
        // EVP_Digest with SHA-256 only fails on allocation failure.
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
    }

    /// The 32-byte digest of `bytes`.
    package static func hash<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var digest = Digest()
        withBytes(bytes) { hash($0, into: &digest) }
        return withUnsafeBytes(of: &digest.bytes) { Array($0) }
    }

    /// The 32-byte digest of a stream too large to hold at once (a backup's database dump): `read`
    /// fills the buffer it is given and returns how many bytes it put there, 0 at the end.
    package static func hash(reading read: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex2(context, algorithm.pointer, nil) == 1 else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_DigestInit_ex2")
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try read(buffer)
            if count == 0 { break }
            guard EVP_DigestUpdate(context, buffer.baseAddress, count) == 1 else {
                throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_DigestUpdate")
            }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == 32 else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_DigestFinal_ex")
        }
        return digest
    }

    /// The lowercase hexadecimal SHA-256 of `bytes` (64 characters).
    package static func hex<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        hexString(hash(bytes))
    }

    /// Whether `hex` is exactly the lowercase hexadecimal SHA-256 of `bytes` (an identity token's
    /// `nonce` claim and the nonce the client sent), compared in constant time. Nothing is
    /// allocated: the digest and its hexadecimal stay on the stack.
    package static func isHexDigest<Hex: Collection<UInt8>, Bytes: Collection<UInt8>>(_ hex: Hex, of bytes: Bytes) -> Bool {
        var digest = Digest()
        withBytes(bytes) { hash($0, into: &digest) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { expected in
            withUnsafeBytes(of: &digest.bytes) { digest in
                for (index, byte) in digest.enumerated() {
                    expected[2 * index] = hexDigits[Int(byte >> 4)]
                    expected[2 * index + 1] = hexDigits[Int(byte & 0x0f)]
                }
            }
            return withBytes(hex) { hex in
                hex.count == 64 && CRYPTO_memcmp(hex.baseAddress, expected.baseAddress, 64) == 0
            }
        }
    }
}

/// The lowercase hexadecimal digits, by value.
private let hexDigits: InlineArray<16, UInt8> = [
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
]

/// Lowercase hexadecimal of `bytes`.
package func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Compares two byte strings in time that depends only on their lengths (`CRYPTO_memcmp`), for
/// secrets such as nonce hashes and token hashes.
package func constantTimeEquals<A: Collection<UInt8>, B: Collection<UInt8>>(_ lhs: A, _ rhs: B) -> Bool {
    withBytes(lhs) { lhs in
        withBytes(rhs) { rhs in
            guard lhs.count == rhs.count else { return false }
            if lhs.isEmpty { return true }
            return CRYPTO_memcmp(lhs.baseAddress, rhs.baseAddress, lhs.count) == 0
        }
    }
}
