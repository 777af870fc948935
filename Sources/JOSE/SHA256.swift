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

    /// The lowercase hexadecimal SHA-256 of `bytes` (64 characters).
    package static func hex<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        hexString(hash(bytes))
    }
}

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
    let lhs = Array(lhs)
    let rhs = Array(rhs)
    guard lhs.count == rhs.count else { return false }
    if lhs.isEmpty { return true }
    return CRYPTO_memcmp(lhs, rhs, lhs.count) == 0
}
