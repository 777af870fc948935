import Foundation
import Identity
import Testing

@Suite struct KeyBundleTests {
    let bundle = KeyBundle(files: [
        KeyBundle.File(role: .dataKeys, name: "data_keys", mode: 0o600, contents: Array("k1 AAAA\n".utf8)),
        KeyBundle.File(role: .accessKey, name: "20260101T000000Z.pem", mode: 0o600, contents: Array("-----BEGIN\n".utf8)),
    ])

    @Test("A sealed bundle opens with its passphrase only, and holds none of its files' contents in the clear")
    func sealed() throws {
        let text = try bundle.text(passphrase: Array("correct horse".utf8))
        #expect(!text.contains("k1 AAAA") && !text.contains("BEGIN"))
        #expect(try KeyBundle.isSealed(text))
        #expect(try KeyBundle(text: text, passphrase: Array("correct horse".utf8)) == bundle)
        #expect(throws: BackupError(.damaged, "")) { try KeyBundle(text: text, passphrase: Array("wrong horse".utf8)) }
        #expect(throws: BackupError(.missing, "")) { try KeyBundle(text: text, passphrase: nil) }
    }

    @Test("An altered sealed bundle is refused")
    func altered() throws {
        let text = try bundle.text(passphrase: Array("pass".utf8))
        let range = try #require(text.range(of: "\"sealed\":\""))
        var altered = text
        let index = altered.index(range.upperBound, offsetBy: 5)
        altered.replaceSubrange(index...index, with: altered[index] == "A" ? "B" : "A")
        #expect(throws: BackupError(.damaged, "")) { try KeyBundle(text: altered, passphrase: Array("pass".utf8)) }
    }

    @Test("A bundle in the clear reads back without a passphrase; text that is not a bundle is refused")
    func clear() throws {
        let text = try bundle.text(passphrase: nil)
        #expect(try !KeyBundle.isSealed(text))
        #expect(try KeyBundle(text: text, passphrase: nil) == bundle)
        #expect(throws: BackupError(.damaged, "")) { try KeyBundle(text: "{}", passphrase: nil) }
        let escaping = text.replacingOccurrences(of: "\"data_keys\"", with: "\"../data_keys\"")
        #expect(throws: BackupError(.damaged, "")) { try KeyBundle(text: escaping, passphrase: nil) }
    }
}
