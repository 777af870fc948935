import JOSE
import Testing

@Suite struct AES256GCMTests {
    let key = (0..<32).map { UInt8($0) }

    @Test("A sealed box opens with the same key and associated data")
    func roundTrip() throws {
        let plaintext = Array("apple refresh token".utf8)
        let box = try AES256GCM.seal(plaintext, key: key, associatedData: Array("user:1".utf8))
        #expect(box.count == 12 + plaintext.count + 16)
        #expect(try AES256GCM.open(box, key: key, associatedData: Array("user:1".utf8)) == plaintext)
        #expect(try AES256GCM.open(try AES256GCM.seal([], key: key), key: key) == [])
    }

    @Test("Two seals of the same plaintext differ (random nonce)")
    func randomNonce() throws {
        let plaintext = Array("x".utf8)
        #expect(try AES256GCM.seal(plaintext, key: key) != AES256GCM.seal(plaintext, key: key))
    }

    @Test("A changed byte, a wrong key, other associated data or a short box do not open")
    func tampering() throws {
        let box = try AES256GCM.seal(Array("secret".utf8), key: key, associatedData: [1])
        for index in box.indices {
            var altered = box
            altered[index] ^= 0x01
            #expect(try AES256GCM.open(altered, key: key, associatedData: [1]) == nil)
        }
        #expect(try AES256GCM.open(box, key: [UInt8](repeating: 9, count: 32), associatedData: [1]) == nil)
        #expect(try AES256GCM.open(box, key: key, associatedData: [2]) == nil)
        #expect(try AES256GCM.open(Array(box.prefix(27)), key: key, associatedData: [1]) == nil)
    }

    @Test("NIST GCM test vector (AES-256, 96-bit IV, empty plaintext) matches through open")
    func nistVector() throws {
        // gcmEncryptExtIV256.rsp, Count = 0: Key 00..00 (32), IV 00..00 (12), PT empty, Tag 530f8afbc74536b9a963b4f1c4cb738b.
        let box =
            [UInt8](repeating: 0, count: 12) + [
                0x53, 0x0f, 0x8a, 0xfb, 0xc7, 0x45, 0x36, 0xb9, 0xa9, 0x63, 0xb4, 0xf1, 0xc4, 0xcb, 0x73, 0x8b,
            ]
        #expect(try AES256GCM.open(box, key: [UInt8](repeating: 0, count: 32)) == [])
    }
}
