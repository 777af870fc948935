import JOSE
import Testing

@Suite struct Base64URLTests {
    @Test(
        "RFC 4648 test vectors round-trip in the URL alphabet without padding",
        arguments: [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test("The URL alphabet replaces + and / with - and _")
    func urlAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test(
        "Padding, foreign characters, impossible lengths and non-canonical trailing bits are rejected",
        arguments: [
            "Zg==", "Zm8=", "+/+/", "Zm9v Yg", "Zm9v\nYg", "Zm9vY", "Z", "Zh", "Zm9", "Zm8.", "Zm9v\u{0}",
        ])
    func rejects(input: String) {
        #expect(Base64URL.decode(input) == nil)
    }

    @Test("Every byte string of length 0 to 64 round-trips, and its encoding is the only one accepted")
    func roundTrip() throws {
        for length in 0...64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
            let encoded = Base64URL.encode(bytes)
            #expect(Base64URL.decode(encoded) == bytes)
            #expect(!encoded.contains("="))
        }
        // "QQ" is the canonical form of [0x41]; "QR".."QT" carry the same byte with stray low bits.
        #expect(Base64URL.decode("QQ") == [0x41])
        for variant in ["QR", "QS", "QT"] { #expect(Base64URL.decode(variant) == nil) }
    }
}
