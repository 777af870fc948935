import Accounts
import Foundation
import Identity
import MariaDB
import SIWATestSupport
import Testing

/// The purge of every table that grows with use (`GrowingTable`, `RetentionPolicy`): rows past
/// their retention go, in batches, and nothing within it does.
@Suite final class RetentionTests: MigratedSchemaSuite {
    func hash(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }
    func count(_ sql: SQL) throws -> Int { try connection.query(sql)[0].decode(at: 0) }
    /// Clock of the purge's time budget only; the rows' ages are the database's.
    let clock = ManualClock(1_000)

    func user() throws -> UInt64 {
        try connection.transaction {
            try AppleAccounts.signIn(
                AppleSignIn(teamID: "TEAM", sub: UUID().uuidString, audience: "com.example.app"), newUserID: TestIDs.next,
                on: connection)
        }.userID
    }

    func session(of userID: UInt64, token: UInt8) throws -> UInt64 {
        try connection.transaction {
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(token), cookieHash: nil,
                lifetime: 3600, on: connection)
        }
    }

    /// Rows of each table, old (days past any retention here) and recent, the old ones in
    /// batches of the test's size and more.
    func fill(old: Int) throws {
        let userID = try user()
        for index in 0..<old {
            try AuditLog.record("old_event", userID: userID, on: connection)
            _ = try connection.execute(
                "INSERT INTO used_nonces (nonce_hash, expires_at) VALUES (\(hash(UInt8(index))), UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE)")
        }
        _ = try connection.execute("UPDATE audit_events SET occurred_at = occurred_at - INTERVAL 400 DAY WHERE event_type = 'old_event'")
        try AuditLog.record("new_event", userID: userID, on: connection)
        _ = try connection.execute(
            "INSERT INTO used_nonces (nonce_hash, expires_at) VALUES (\(hash(200)), UTC_TIMESTAMP(3) + INTERVAL 1 MINUTE)")
    }

    @Test("Rows past their retention go in batches; rows within it, live sessions and their live tokens stay")
    func purge() throws {
        try fill(old: 7)
        let userID = try user()
        // A session revoked 40 days ago (its expiry becomes its revocation), one that expired 40
        // days ago, one live whose rotation spent a token 40 days ago, one revoked today.
        let revoked = try session(of: userID, token: 1)
        let expired = try session(of: userID, token: 2)
        let live = try session(of: userID, token: 3)
        let revokedToday = try session(of: userID, token: 4)
        for id in [revoked, revokedToday] { _ = try connection.transaction { try Sessions.revoke(id, reason: "test", on: connection) } }
        #expect(
            try count("SELECT COUNT(*) FROM sessions WHERE id = \(revoked) AND expires_at <= UTC_TIMESTAMP(3)") == 1,
            "a revoked session's expiry is its revocation")
        _ = try connection.execute(
            "UPDATE sessions SET expires_at = expires_at - INTERVAL 40 DAY, revoked_at = revoked_at - INTERVAL 40 DAY WHERE id = \(revoked)"
        )
        _ = try connection.execute("UPDATE sessions SET expires_at = UTC_TIMESTAMP(3) - INTERVAL 40 DAY WHERE id = \(expired)")
        _ = try connection.transaction {
            try Sessions.rotate(presentedHash: hash(3), nextHash: hash(5), lifetime: 3600, remoteAddress: nil, on: connection)
        }
        _ = try connection.execute("UPDATE refresh_tokens SET spent_at = spent_at - INTERVAL 40 DAY WHERE token_hash = \(hash(3))")

        let pass = try RetentionPolicy(batch: 3).purge(on: connection, clock: clock)
        #expect(pass.deleted[GrowingTable.auditEvents] == 7)
        #expect(pass.deleted[GrowingTable.usedNonces] == 7)
        #expect(pass.deleted[GrowingTable.endedSessions] == 2)
        #expect(pass.deleted[GrowingTable.spentRefreshTokens] == 1)
        #expect(pass.unfinished.isEmpty)
        #expect(try AuditLog.recent(userID: nil, limit: 100, on: connection).map(\.type).allSatisfy { $0 != "old_event" })
        #expect(try count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'new_event'") == 1)
        #expect(try count("SELECT COUNT(*) FROM used_nonces") == 1)
        #expect(try count("SELECT COUNT(*) FROM sessions WHERE user_id = \(userID)") == 2)
        #expect(try count("SELECT COUNT(*) FROM sessions WHERE id IN (\(live), \(revokedToday))") == 2)
        #expect(try count("SELECT COUNT(*) FROM refresh_tokens WHERE session_id IN (\(revoked), \(expired))") == 0, "with their sessions")
        #expect(try count("SELECT COUNT(*) FROM refresh_tokens WHERE token_hash = \(hash(5)) AND spent_at IS NULL") == 1)
        // A live session's refresh goes on after the purge.
        let next = try connection.transaction {
            try Sessions.rotate(presentedHash: hash(5), nextHash: hash(6), lifetime: 3600, remoteAddress: nil, on: connection)
        }
        #expect(next == .rotated(Sessions.Active(sessionID: live, userID: userID)))
        #expect(try RetentionPolicy(batch: 3).purge(on: connection, clock: clock).total == 0, "nothing left to purge")
    }

    @Test("A pass out of time leaves the rest for the next, and says which tables")
    func timeBudget() throws {
        try fill(old: 5)
        let pass = try RetentionPolicy(batch: 2, timeBudget: 0).purge(on: connection, clock: clock)
        #expect(pass.total == 0)
        #expect(pass.unfinished == GrowingTable.allCases)
        #expect(try count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'old_event'") == 5)
    }

    @Test("An event a webhook delivery still waits for is kept past the retention; delivered ones go with their deliveries")
    func webhookEvents() throws {
        let userID = try user()
        for (index, state) in ["pending", "delivered"].enumerated() {
            _ = try connection.execute(
                """
                INSERT INTO webhook_events (id, public_id, event_type, user_id, body, created_at)
                VALUES (\(index + 1), \("evt_\(index)"), 'user.deleted', \(userID), '{}', UTC_TIMESTAMP(3) - INTERVAL 40 DAY)
                """)
            _ = try connection.execute(
                "INSERT INTO webhook_deliveries (event_id, endpoint, user_id, state) VALUES (\(index + 1), 'https://a.example', \(userID), \(state))"
            )
        }
        let pass = try RetentionPolicy().purge(on: connection, clock: clock)
        #expect(pass.deleted[GrowingTable.webhookEvents] == 1)
        #expect(try count("SELECT COUNT(*) FROM webhook_events WHERE id = 1") == 1)
        #expect(try count("SELECT COUNT(*) FROM webhook_deliveries") == 1)
    }

    @Test("The oldest age of each table, for GET /metrics: seconds since its oldest row became purgeable, 0 for none")
    func oldestAges() throws {
        try fill(old: 1)
        let ages = try GrowingTable.oldestAges(on: connection)
        #expect(Set(ages.keys) == Set(GrowingTable.allCases))
        #expect((ages[.auditEvents] ?? 0) >= 400 * 86_400)
        #expect((ages[.usedNonces] ?? 0) >= 60)
        #expect(ages[.webhookEvents] == 0)
    }
}
