import Identity
import JOSE
import Testing

@Suite struct WebhookSignatureTests {
    @Test("The signature header is t=<time>,v1=<hex HMAC-SHA256 of \"<time>.<body>\">, one v1 per secret, in the order listed")
    func format() {
        let body = Array(#"{"id":"evt_1"}"#.utf8)
        let old = Array(String(repeating: "o", count: 32).utf8)
        let new = Array(String(repeating: "n", count: 32).utf8)
        let header = WebhookSender.signature(body: body, time: 1_700_000_000, secrets: [new, old])
        let signed = Array("1700000000.".utf8) + body
        let expected = [new, old].map { "v1=" + hexString(HMACSHA256.authenticationCode(key: $0, message: signed)) }
        #expect(header == "t=1700000000," + expected.joined(separator: ","))
        #expect(
            WebhookSender.signature(body: body + [0x20], time: 1_700_000_000, secrets: [new]) != "t=1700000000," + expected[0],
            "a changed body changes the signature")
    }
}
