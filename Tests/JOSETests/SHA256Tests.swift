import JOSE
import Testing

@Suite struct SHA256Tests {
    @Test(
        "SHA-256 matches the FIPS 180-2 test vectors",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
        ])
    func vectors(input: String, expected: String) {
        #expect(SHA256.hex(Array(input.utf8)) == expected)
    }

    @Test("Secure random bytes have the requested length and differ between calls")
    func random() throws {
        let first = try SecureRandom.bytes(count: 32)
        let second = try SecureRandom.bytes(count: 32)
        #expect(first.count == 32)
        #expect(first != second)
    }
}

@Suite struct SHA256StreamTests {
    @Test("Hashing a stream in blocks gives the one-shot digest, also for an empty stream")
    func stream() throws {
        for size in [0, 1, 1 << 20, (1 << 20) + 17, 3 << 20] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            var offset = 0
            let digest = try SHA256.hash { buffer in
                let count = min(buffer.count, bytes.count - offset)
                buffer.copyBytes(from: bytes[offset..<(offset + count)])
                offset += count
                return count
            }
            #expect(digest == SHA256.hash(bytes), "\(size) bytes")
        }
    }
}
