import JOSE
import Testing

@Suite struct HMACSHA256Tests {
    @Test(
        "HMAC-SHA256 matches the RFC 4231 test vectors (a short key, a key shorter than the output, a key longer than a block)",
        arguments: [
            ([UInt8](repeating: 0x0b, count: 20), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (
                [UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
        ])
    func vectors(key: [UInt8], message: String, expected: String) {
        #expect(hexString(HMACSHA256.authenticationCode(key: key, message: Array(message.utf8))) == expected)
    }
}
