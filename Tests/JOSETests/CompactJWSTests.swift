import JOSE
import StrictJSON
import Testing

@Suite struct CompactJWSTests {
    static let header = Base64URL.encode(Array(#"{"alg":"RS256","kid":"k"}"#.utf8))
    static let payload = Base64URL.encode(Array(#"{"sub":"x"}"#.utf8))
    static let signature = Base64URL.encode([1, 2, 3])

    @Test("A compact JWS splits into header, signing input, payload and signature")
    func splits() throws {
        let token = "\(Self.header).\(Self.payload).\(Self.signature)"
        let jws = try CompactJWS(token)
        #expect(try jws.header.string("alg") == "RS256")
        #expect(jws.signingInput == Array("\(Self.header).\(Self.payload)".utf8))
        #expect(jws.signature == [1, 2, 3])
        #expect(try jws.decodePayload().string("sub") == "x")
    }

    @Test(
        "Anything but three strict base64url parts is malformed",
        arguments: [
            "a.b", "a.b.c.d", "..", ".\(payload).\(signature)", "\(header)..\(signature)",
            "\(header)=.\(payload).\(signature)", "\(header).\(payload).\(signature)=",
            "\(header).\(payload).\(signature)\n", " \(header).\(payload).\(signature)",
            "\(header).\(payload)+.\(signature)",
        ])
    func malformed(token: String) {
        #expect(throws: JOSEError(.malformed, reason: "")) { try CompactJWS(token) }
    }

    @Test("A header that is not a JSON object with unique names is refused")
    func headerJSON() {
        for header in [#"{"alg":"RS256","alg":"none"}"#, "[]", "not json"] {
            let token = "\(Base64URL.encode(Array(header.utf8))).\(Self.payload).\(Self.signature)"
            #expect(throws: JOSEError(.invalidJSON, reason: "")) { try CompactJWS(token) }
        }
    }

    @Test("A payload with a duplicate claim is refused when decoded")
    func payloadDuplicates() throws {
        let payload = Base64URL.encode(Array(#"{"sub":"a","sub":"b"}"#.utf8))
        let jws = try CompactJWS("\(Self.header).\(payload).\(Self.signature)")
        #expect(throws: JOSEError(.invalidJSON, reason: "")) { try jws.decodePayload() }
    }

    @Test("Tokens over the size limit are refused before decoding")
    func sizeLimit() {
        let big = String(repeating: "A", count: CompactJWS.defaultMaximumLength)
        #expect(throws: JOSEError(.tooLarge, reason: "")) { try CompactJWS("\(Self.header).\(big).\(Self.signature)") }
    }
}
