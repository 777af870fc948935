import Accounts
import Foundation
import MariaDB
import Testing

@Suite final class BackupStatementsTests: MigratedSchemaSuite {
    @Test("The sealed Apple tokens are counted and sampled by data key, pending revocations included and sent ones not")
    func sealedTokens() throws {
        _ = try connection.execute("INSERT INTO users (id) VALUES (1), (2)")
        _ = try connection.execute(
            """
            INSERT INTO apple_identities (id, user_id, team_id, sub, audience) VALUES
                (1, 1, 'TEAMID0001', 'sub-1', 'com.example.app'), (2, 2, 'TEAMID0001', 'sub-2', 'com.example.app')
            """)
        _ = try connection.execute(
            """
            INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at) VALUES
                (1, 'com.example.app', X'01', 'k1', UTC_TIMESTAMP(3)), (2, 'com.example.app', X'02', 'k2', UTC_TIMESTAMP(3)),
                (2, 'com.example.web', X'03', 'k2', UTC_TIMESTAMP(3))
            """)
        _ = try connection.execute(
            """
            INSERT INTO apple_revocations (client_id, token, token_key_id, token_type_hint, done_at) VALUES
                ('com.example.app', X'04', 'k0', 'refresh_token', NULL), ('com.example.app', X'05', 'kx', 'refresh_token', UTC_TIMESTAMP(3))
            """)
        #expect(try BackupStatements.sealedTokenCounts(on: connection) == ["k0": 1, "k1": 1, "k2": 2])
        let samples = try BackupStatements.sampleSealedTokens(keyID: "k2", limit: 1, on: connection)
        #expect(samples.count == 1 && samples[0].keyID == "k2" && [[2], [3]].contains(samples[0].ciphertext))
        #expect(try BackupStatements.sampleSealedTokens(keyID: "k0", limit: 3, on: connection).map(\.ciphertext) == [[4]])
        #expect(try BackupStatements.sampleSealedTokens(keyID: "kx", limit: 3, on: connection).isEmpty, "a sent revocation")
        let counts = try BackupStatements.rowCounts(on: connection)
        #expect(counts.map(\.table) == BackupStatements.countedTables)
        #expect(counts.first { $0.table == "apple_tokens" }?.rows == 3)
    }

    @Test("A database's tables are counted, a missing database is nil; one is created and dropped by name")
    func databases() throws {
        let name = database.configuration.database ?? ""
        #expect(try BackupStatements.tableCount(database: name, on: connection) ?? 0 > 10)
        let other = name + "_restored"
        let server = Connection(configuration: try TestDatabase.serverConfiguration())
        defer { server.close() }
        #expect(try BackupStatements.tableCount(database: other, on: connection) == nil)
        try BackupStatements.createDatabase(other, on: server)
        #expect(try BackupStatements.tableCount(database: other, on: connection) == 0)
        try BackupStatements.dropDatabase(other, on: server)
        #expect(try BackupStatements.tableCount(database: other, on: connection) == nil)
        #expect(
            BackupStatements.isPlainName("siwa_2$") && !BackupStatements.isPlainName("siwa`; DROP") && !BackupStatements.isPlainName(""))
    }
}
