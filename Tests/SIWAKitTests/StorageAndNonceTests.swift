import Foundation
import SIWAKit
import Testing

@Suite struct StorageAndNonceTests {
    @Test("The nonce: 32 random bytes base64url, and the SHA-256 hex that Apple gets")
    func nonce() {
        let nonce = SignInNonce()
        #expect(nonce.value.count == 43)
        #expect(nonce.value.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(nonce.value != SignInNonce().value)
        // FIPS 180-2's example: SHA-256("abc").
        #expect(SignInNonce(value: "abc").hashed == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("FileStorage: values replaced whole, files 0600 in a 0700 directory, no temporary files left, keys are names")
    func fileStorage() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("siwakit-\(UUID().uuidString)/state")
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        let storage = FileStorage(directory: directory)
        #expect(try storage.read("session") == nil)
        try storage.write(Data("one".utf8), for: "session")
        try storage.write(Data("two".utf8), for: "session")
        #expect(try storage.read("session") == Data("two".utf8))
        let file = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("session").path)
        let folder = try FileManager.default.attributesOfItem(atPath: directory.path)
        #expect((file[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((folder[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["session"])
        try storage.delete("session")
        try storage.delete("session")
        #expect(try storage.read("session") == nil)
        for bad in ["", "../session", "a/b", ".hidden"] {
            #expect(throws: SIWAError.self, "\(bad)") { try storage.write(Data(), for: bad) }
        }
    }
}
