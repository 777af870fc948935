import Accounts
import Identity
import Testing

@Suite struct BackupManifestTests {
    @Test("The manifest reads back as it was written")
    func roundTrip() throws {
        let manifest = BackupManifest(
            createdAt: "2026-11-27T19:00:00Z", siwaVersion: "0.10.0", serverVersion: "10.11.19-MariaDB",
            dumpTool: "mariadb-dump  Ver 10.19", database: "siwa", schemaVersion: 22,
            binaryLog: .init(file: "binlog.000002", position: 1234, gtid: "0-1-42"),
            files: [.init(name: "database.sql", bytes: 10, sha256: String(repeating: "a", count: 64))], keyRoles: ["data-keys"],
            keysSealed: true, sealedTokens: ["k1": 3, "k0": 1],
            tokenSamples: [SealedAppleToken(ciphertext: [1, 2, 3], keyID: "k1", clientID: "com.example.app")],
            rowCounts: [("users", 3), ("sessions", 4)])
        let read = try BackupManifest(text: manifest.text)
        #expect(read == manifest)
        #expect(read.binaryLog?.position == 1234 && read.tokenSamples.first?.ciphertext == [1, 2, 3])
        #expect(read.file("database.sql")?.bytes == 10)
        #expect(throws: BackupError(.damaged, "")) { try BackupManifest(text: "{\"format\":\"siwa-backup-1\"}") }
    }
}
