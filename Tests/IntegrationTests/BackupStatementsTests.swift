import Accounts
import Foundation
import Identity
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
        let k2 = try (0..<3).map { try BackupStatements.sealedToken(keyID: "k2", at: $0, on: connection) }
        #expect(k2.map { $0?.ciphertext } == [[2], [3], nil] && k2.allSatisfy { $0 == nil || $0?.keyID == "k2" })
        #expect(try BackupStatements.sealedToken(keyID: "k0", at: 0, on: connection)?.ciphertext == [4])
        #expect(try BackupStatements.sealedToken(keyID: "kx", at: 0, on: connection) == nil, "a sent revocation")
        // Up to three a key, each once: k0's revocation, k1's one token, both of k2's.
        let samples = try DataKeyCheck.samples(of: BackupStatements.sealedTokenCounts(on: connection), on: connection)
        #expect(samples.map(\.ciphertext).sorted { $0[0] < $1[0] } == [[1], [2], [3], [4]])
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
