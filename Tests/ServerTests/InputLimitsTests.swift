import Server
import Testing

/// The length limits of client input count code points, as the document's `maxLength` does
/// (schemathesis found a `user` of 200 code points and 400 bytes refused).
@Suite struct InputLimitsTests {
    @Test("A string at the limit in code points passes whatever its bytes; one more code point is refused")
    func codePoints() throws {
        let accented = String(repeating: "\u{E9}", count: 255)  // 510 bytes
        #expect(try limited(accented, "user", maximum: 255) == accented)
        let flags = String(repeating: "\u{1F1EB}", count: 255)  // 1,020 bytes
        #expect(try limited(flags, "user", maximum: 255) == flags)
        #expect(throws: HTTPError.self) { try limited(accented + "a", "user", maximum: 255) }
        #expect(try limited(nil, "user", maximum: 255) == nil)
    }
}
