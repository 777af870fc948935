import AccountData
import Accounts
import Foundation
import Identity
import MariaDB
import SIWATestSupport
import Server
import Testing

/// Sessions, refresh-token rotation, account deletion and the Apple token jobs' SQL, on a schema
/// migrated with the project's own migrations.
@Suite final class SessionsTests: MigratedSchemaSuite {
    func hash(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }
    func count(_ sql: SQL) throws -> Int { try connection.query(sql)[0].decode(at: 0) }
    /// The revocations' waits, as `siwa jobs` computes them.
    let revocationDelay: (Int) -> Int = { RetryPolicy.appleRevocations.hold(forAttempt: $0) }

    func user(sealed: SealedAppleToken? = nil) throws -> UInt64 {
        try connection.transaction {
            try AppleAccounts.signIn(
                AppleSignIn(teamID: "TEAM", sub: UUID().uuidString, audience: "com.example.app", appleRefreshToken: sealed),
                newUserID: TestIDs.next,
                on: connection)
        }.userID
    }

    func rotate(_ presented: UInt8, _ next: UInt8, reuseInterval: Int = 0) throws -> Sessions.Rotation {
        try connection.transaction {
            try Sessions.rotate(
                presentedHash: hash(presented), nextHash: hash(next), lifetime: 3600, reuseInterval: reuseInterval,
                remoteAddress: "127.0.0.1", on: connection)
        }
    }

    @Test("A rotation extends the session by the lifetime and marks only the presented token spent")
    func rotationExtendsTheSession() throws {
        let userID = try user()
        let sessionID = try connection.transaction {
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(1), cookieHash: nil,
                lifetime: 60, on: connection)
        }
        _ = try rotate(1, 2)
        let remaining: Int = try connection.query(
            "SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), expires_at) FROM sessions WHERE id = ?", sessionID)[0].decode(at: 0)
        #expect(remaining > 3000, "rotate(lifetime: 3600) left \(remaining) s")
        #expect(try count("SELECT COUNT(*) FROM refresh_tokens WHERE spent_at IS NOT NULL") == 1)
        #expect(try count("SELECT COUNT(*) FROM refresh_tokens WHERE spent_at IS NULL") == 1)
    }

    @Test("A maximum lifetime caps the session from its start: a new session and every rotation end at created_at + maximum")
    func maximumLifetime() throws {
        let userID = try user()
        let sessionID = try connection.transaction {
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(1), cookieHash: nil,
                lifetime: 3600,
                maximumLifetime: 7200, on: connection)
        }
        let span: SQL = "SELECT TIMESTAMPDIFF(SECOND, created_at, expires_at) FROM sessions WHERE id = \(sessionID)"
        #expect(try count(span) == 3600, "below the maximum, the lifetime")
        _ = try connection.execute("UPDATE sessions SET created_at = created_at - INTERVAL 5000 SECOND WHERE id = ?", sessionID)
        let rotated = try connection.transaction {
            try Sessions.rotate(
                presentedHash: hash(1), nextHash: hash(2), lifetime: 3600, maximumLifetime: 7200, remoteAddress: nil, on: connection)
        }
        #expect(rotated == .rotated(Sessions.Active(sessionID: sessionID, userID: userID)))
        #expect(try count(span) == 7200, "a refresh 5,000 s in extends to the maximum only")
        // 3,000 s later: 8,000 s after it began.
        _ = try connection.execute(
            "UPDATE sessions SET created_at = created_at - INTERVAL 3000 SECOND, expires_at = expires_at - INTERVAL 3000 SECOND WHERE id = ?",
            sessionID)
        let late = try connection.transaction {
            try Sessions.rotate(
                presentedHash: hash(2), nextHash: hash(3), lifetime: 3600, maximumLifetime: 7200, remoteAddress: nil, on: connection)
        }
        #expect(late == .inactive, "past the maximum the session has ended, however often it was refreshed")
    }

    @Test("Audit events older than the retention are purged; newer ones stay")
    func auditRetention() throws {
        let userID = try user()
        try AuditLog.record("old_event", userID: userID, on: connection)
        _ = try connection.execute("UPDATE audit_events SET occurred_at = occurred_at - INTERVAL 3 DAY WHERE event_type = 'old_event'")
        try AuditLog.record("new_event", userID: userID, on: connection)
        #expect(try GrowingTable.auditEvents.purge(olderThan: 2 * 86_400, limit: 10, on: connection) == 1)
        #expect(try AuditLog.recent(userID: userID, limit: 10, on: connection).map(\.type) == ["new_event"])
    }

    @Test("Rotation spends the token and issues the next; a spent token again revokes the family and is audited")
    func rotationAndReuse() throws {
        let userID = try user()
        let sessionID = try connection.transaction {
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: nil, device: " iPhone\u{0000} ", refreshTokenHash: hash(1),
                cookieHash: nil, lifetime: 3600,
                on: connection)
        }
        let active = Sessions.Active(sessionID: sessionID, userID: userID)
        #expect(try rotate(1, 2) == .rotated(active))
        #expect(try rotate(2, 3) == .rotated(active))
        #expect(try rotate(9, 10) == .unknown)
        #expect(try Sessions.isActive(sessionID: sessionID, userID: userID, on: connection))
        #expect(try rotate(1, 4) == .reused(active), "token 1 was spent")
        #expect(try !Sessions.isActive(sessionID: sessionID, userID: userID, on: connection))
        #expect(try rotate(3, 5) == .inactive, "the current token of a revoked family is refused too")
        #expect(try count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'refresh_token_reuse'") == 1)
        #expect(try Sessions.list(userID: userID, on: connection).isEmpty)
        let reason: String = try connection.query("SELECT revoke_reason FROM sessions WHERE id = ?", sessionID)[0].decode(at: 0)
        #expect(reason == "refresh_token_reuse")
    }

    @Test("A lost answer: the token rotated last, again within the reuse interval, gets a new pair for the same session")
    func retryWithinReuseInterval() throws {
        let userID = try user()
        let sessionID = try connection.transaction {
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(1), cookieHash: nil,
                lifetime: 3600, on: connection)
        }
        let active = Sessions.Active(sessionID: sessionID, userID: userID)
        #expect(try rotate(1, 2, reuseInterval: 10) == .rotated(active))
        // The answer carrying token 2 was lost; the client presents token 1 again.
        #expect(try rotate(1, 3, reuseInterval: 10) == .reissued(active), "a retry within the interval")
        #expect(try count("SELECT COUNT(*) FROM refresh_tokens WHERE spent_at IS NULL") == 1, "one live token per session")
        #expect(try rotate(3, 4, reuseInterval: 10) == .rotated(active), "the retry's token is the session's token")
        #expect(try Sessions.isActive(sessionID: sessionID, userID: userID, on: connection))
        #expect(try count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'refresh_token_reuse'") == 0)
        // Token 2, retired by the retry, is not the token rotated last: reuse.
        #expect(try rotate(2, 5, reuseInterval: 10) == .reused(active))
        #expect(try !Sessions.isActive(sessionID: sessionID, userID: userID, on: connection))
    }

    @Test("The token rotated last, again after the interval or with the interval off, is reuse and ends the session")
    func retryAfterReuseInterval() throws {
        let userID = try user()
        for (first, interval) in [(UInt8(1), 10), (UInt8(11), 0)] {
            let sessionID = try connection.transaction {
                try Sessions.create(
                    id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(first), cookieHash: nil,
                    lifetime: 3600,
                    on: connection)
            }
            let active = Sessions.Active(sessionID: sessionID, userID: userID)
            #expect(try rotate(first, first + 1, reuseInterval: interval) == .rotated(active))
            _ = try connection.execute("UPDATE sessions SET rotated_at = rotated_at - INTERVAL ? SECOND WHERE id = ?", interval, sessionID)
            #expect(try rotate(first, first + 2, reuseInterval: interval) == .reused(active), "interval \(interval)")
            #expect(try !Sessions.isActive(sessionID: sessionID, userID: userID, on: connection))
        }
        #expect(try count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'refresh_token_reuse'") == 2)
    }

    @Test("Sessions are found by the hash of their cookie, listed with their cleaned device labels, and revoked only by their user")
    func storedAsHashes() throws {
        let userID = try user()
        let web = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: nil, device: "Web browser", refreshTokenHash: nil, cookieHash: hash(7),
            lifetime: 3600,
            on: connection)
        let native = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: nil, device: " iPhone\u{0007} ", refreshTokenHash: hash(8), cookieHash: nil,
            lifetime: 3600,
            on: connection)
        #expect(try Sessions.active(cookieHash: hash(7), on: connection) == Sessions.Active(sessionID: web, userID: userID))
        #expect(try Sessions.active(cookieHash: hash(8), on: connection) == nil)
        let list = try Sessions.list(userID: userID, on: connection)
        #expect(Set(list.map(\.id)) == [web, native])
        #expect(list.first { $0.id == native }?.device == "iPhone")
        #expect(list.first { $0.id == web }?.isWeb == true)
        let stored: [UInt8] = try connection.query("SELECT token_hash FROM refresh_tokens WHERE session_id = ?", native)[0].decode(at: 0)
        #expect(stored == hash(8))
        #expect(try Sessions.revoke(web, of: userID + 1, reason: "x", on: connection) == false, "not another user's session")
        #expect(try Sessions.revoke(web, of: userID, reason: "revoked_by_user", on: connection))
        #expect(try Sessions.active(cookieHash: hash(7), on: connection) == nil)
    }

    @Test("Deleting an account removes every row of the user in one go and queues the revocation with the minting client id")
    func deletion() throws {
        let sealed = SealedAppleToken(ciphertext: [1, 2, 3, 4], keyID: "k1", clientID: "com.example.app")
        let userID = try user(sealed: sealed)
        let other = try user()
        _ = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(1), cookieHash: nil, lifetime: 3600,
            on: connection)
        _ = try Sessions.create(
            id: TestIDs.next(), userID: other, appleClientID: nil, device: nil, refreshTokenHash: hash(2), cookieHash: nil, lifetime: 3600,
            on: connection)
        #expect(try connection.transaction { try AccountDeletion.delete(userID: userID, remoteAddress: nil, on: connection) })
        #expect(try count("SELECT COUNT(*) FROM users") == 1)
        #expect(try count("SELECT COUNT(*) FROM sessions") == 1)
        #expect(try count("SELECT COUNT(*) FROM refresh_tokens") == 1)
        #expect(try count("SELECT COUNT(*) FROM apple_identities") == 1)
        #expect(try count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'account_deleted'") == 1)
        #expect(try connection.transaction { try AccountDeletion.delete(userID: userID, remoteAddress: nil, on: connection) } == false)

        let claimed = try AppleRevocationOutbox.claimDue(limit: 10, retryDelay: revocationDelay, on: connection)
        #expect(claimed == [PendingRevocation(id: claimed.first?.id ?? 0, token: sealed, tokenTypeHint: "refresh_token", attempts: 1)])
        #expect(
            try AppleRevocationOutbox.claimDue(limit: 10, retryDelay: revocationDelay, on: connection).isEmpty,
            "claimed rows wait for their retry time")
        let delay: Int = try connection.query("SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), next_attempt_at) FROM apple_revocations")[0]
            .decode(at: 0)
        #expect((25...30).contains(delay), "first retry after 30 s, got \(delay)")
        try AppleRevocationOutbox.markFailed(claimed[0].id, error: "unreachable", on: connection)
        _ = try connection.execute("UPDATE apple_revocations SET next_attempt_at = UTC_TIMESTAMP(3)")
        #expect(try AppleRevocationOutbox.claimDue(limit: 10, retryDelay: revocationDelay, on: connection).map(\.attempts) == [2])
        try AppleRevocationOutbox.markDone(claimed[0].id, on: connection)
        _ = try connection.execute("UPDATE apple_revocations SET next_attempt_at = UTC_TIMESTAMP(3)")
        #expect(
            try AppleRevocationOutbox.claimDue(limit: 10, retryDelay: revocationDelay, on: connection).isEmpty,
            "done rows are never sent again")
        #expect(try count("SELECT COUNT(*) FROM apple_revocations WHERE LENGTH(token) = 0") == 1, "the token is erased once revoked")
    }

    @Test(
        "A repeat sign-in never queues a revocation; a due validation is claimed once; a refused token ends its client's sessions, consent withdrawn ends every session"
    )
    func validation() throws {
        let app = SealedAppleToken(ciphertext: [9, 9], keyID: "k1", clientID: "com.example.app")
        let web = SealedAppleToken(ciphertext: [8, 8], keyID: "k1", clientID: "com.example.web")
        let sub = "sub-validation"
        let signIn = AppleSignIn(
            teamID: "TEAM", sub: sub, audience: "com.example.app", appleRefreshToken: app,
            firstValidationIn: RetryPolicy.appleValidations.delay(afterAttempt: 1))
        let userID = try connection.transaction { try AppleAccounts.signIn(signIn, newUserID: TestIDs.next, on: connection) }.userID
        _ = try connection.transaction { try AppleAccounts.signIn(signIn, newUserID: TestIDs.next, on: connection) }
        var onTheWeb = signIn
        onTheWeb.audience = web.clientID
        onTheWeb.appleRefreshToken = web
        _ = try connection.transaction { try AppleAccounts.signIn(onTheWeb, newUserID: TestIDs.next, on: connection) }
        #expect(try count("SELECT COUNT(*) FROM apple_revocations") == 0)
        #expect(try count("SELECT COUNT(*) FROM apple_tokens") == 2, "one token per client id")
        let park = 30 * 86_400
        #expect(
            try AppleValidations.claimDue(teamID: "TEAM", limit: 10, lease: 900, park: park, on: connection).isEmpty, "not due for a day")
        _ = try connection.execute("UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3)")
        #expect(
            try AppleValidations.claimDue(teamID: "OTHERTEAM1", limit: 10, lease: 900, park: park, on: connection).isEmpty,
            "another team's tokens (after a transfer) are never checked with this team's credentials")
        #expect(
            try count("SELECT COUNT(*) FROM apple_tokens WHERE next_validation_at > UTC_TIMESTAMP(3) + INTERVAL 29 DAY") == 2,
            "and put a month ahead, out of the head of the queue")
        _ = try connection.execute("UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3)")
        let due = try AppleValidations.claimDue(teamID: "TEAM", limit: 10, lease: 900, park: park, on: connection)
        #expect(Set(due.map(\.token.clientID)) == [app.clientID, web.clientID] && due.allSatisfy { $0.userID == userID })
        #expect(
            try AppleValidations.claimDue(teamID: "TEAM", limit: 10, lease: 900, park: park, on: connection).isEmpty, "claimed once")
        let appSession = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: app.clientID, device: nil, refreshTokenHash: hash(1), cookieHash: nil,
            lifetime: 3600,
            on: connection)
        _ = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: web.clientID, device: nil, refreshTokenHash: nil, cookieHash: hash(2),
            lifetime: 3600,
            on: connection)
        _ = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(3), cookieHash: nil, lifetime: 3600,
            on: connection)
        let refused = try #require(due.first { $0.token == web })
        #expect(
            try connection.transaction { try AppleValidations.tokenRefused(refused, on: connection) }.count == 2, "web and unknown origin")
        #expect(try Sessions.list(userID: userID, on: connection).map(\.id) == [appSession])
        #expect(try count("SELECT COUNT(*) FROM apple_tokens WHERE client_id = 'com.example.app'") == 1)
        #expect(try count("SELECT COUNT(*) FROM apple_identities WHERE consent_state = 'active'") == 1, "the app's token is still good")

        let ended = try connection.transaction {
            try AppleValidations.consentRevoked(
                userID: userID, identityID: refused.identityID, source: "apple_notification", on: connection)
        }
        #expect(ended == [appSession])
        #expect(try Sessions.list(userID: userID, on: connection).isEmpty)
        #expect(try count("SELECT COUNT(*) FROM apple_identities WHERE consent_state = 'revoked'") == 1)
        #expect(try count("SELECT COUNT(*) FROM apple_tokens") == 0)
    }

    @Test("A web sign-in's handle is redeemed once; an unknown or expired state finds nothing")
    func webSignIns() throws {
        try WebSignIns.start(
            stateHash: hash(1), bindingHash: hash(2), nonce: "raw-nonce", returnTo: "/account", lifetime: 600, on: connection)
        #expect(try WebSignIns.pending(stateHash: hash(9), on: connection) == nil)
        let pending = try #require(try WebSignIns.pending(stateHash: hash(1), on: connection))
        #expect(pending.nonce == "raw-nonce" && pending.returnTo == "/account")
        try WebSignIns.complete(
            pending.id, handleHash: hash(3), userID: nil, isNewUser: false, error: "user_cancelled_authorize", on: connection)
        #expect(try WebSignIns.pending(stateHash: hash(1), on: connection) == nil, "a state is used once")
        let completed = try connection.transaction { try WebSignIns.redeem(handleHash: hash(3), on: connection) }
        #expect(completed?.error == "user_cancelled_authorize" && completed?.bindingHash == hash(2))
        #expect(try connection.transaction { try WebSignIns.redeem(handleHash: hash(3), on: connection) } == nil, "a handle is used once")
        try WebSignIns.start(stateHash: hash(4), bindingHash: hash(2), nonce: "n", returnTo: "/", lifetime: -1, on: connection)
        #expect(try WebSignIns.pending(stateHash: hash(4), on: connection) == nil, "expired")
    }

    @Test("A duplicate-entry error names the key in its log text, not the value (docs/SECURITY.md rule 8)")
    func duplicateErrorsAreRedacted() throws {
        let userID = try user()
        let insert: SQL =
            "INSERT INTO user_emails (user_id, address, is_private_relay, verified) VALUES (?, 'secret.person@example.com', 0, 1)"
        _ = try connection.execute(insert, userID)
        let error = try #require(throws: MariaDBError.self) { try connection.execute(insert, userID) }
        #expect(error.code == .duplicateEntry)
        let logged = String(reflecting: error)
        #expect(!logged.contains("secret.person"), "\(logged)")
        #expect(logged.contains("user_emails_user_address"), "\(logged)")
    }

    @Test(
        "Anonymising keeps the user row and its progress but drops names, emails, identities and sessions; the Apple account signs in anew")
    func anonymise() throws {
        let signIn = AppleSignIn(
            teamID: "TEAM", sub: "sub-anon", audience: "com.example.app", email: "anon@example.com", emailVerified: true,
            firstName: "Ann", lastName: "On")
        let userID = try connection.transaction { try AppleAccounts.signIn(signIn, newUserID: TestIDs.next, on: connection) }.userID
        _ = try Sessions.create(
            id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: hash(1), cookieHash: nil, lifetime: 3600,
            on: connection)
        _ = try connection.execute(
            "INSERT INTO sync_records (user_id, collection, item_key, body, version) VALUES (?, 'progress', 'b\u{1F}l', '{}', 1)", userID)
        #expect(try connection.transaction { try AccountDeletion.anonymise(userID: userID, source: "apple_notification", on: connection) })
        #expect(try count("SELECT COUNT(*) FROM users WHERE id = \(userID) AND first_name IS NULL AND last_name IS NULL") == 1)
        #expect(try count("SELECT COUNT(*) FROM user_emails") == 0)
        #expect(try count("SELECT COUNT(*) FROM apple_identities") == 0)
        #expect(try count("SELECT COUNT(*) FROM sync_records WHERE user_id = \(userID)") == 1, "progress is kept")
        #expect(try Sessions.list(userID: userID, on: connection).isEmpty)
        let again = try connection.transaction { try AppleAccounts.signIn(signIn, newUserID: TestIDs.next, on: connection) }
        #expect(again.isNewUser && again.userID != userID, "the same Apple account is a new user now")
        #expect(try connection.transaction { try AccountDeletion.anonymise(userID: 999_999, source: "x", on: connection) } == false)
    }
}

/// The session cache stays behind the database: what another process ends is forgotten by the
/// next poll of the revocation log, and without a recent poll the cache answers nothing.
@Suite final class SessionCacheTests {
    let database: TestDatabase

    init() throws { database = try TestDatabase.migrated() }

    deinit { database.drop() }

    @Test("A remembered session answers after a poll; revoked elsewhere it is forgotten within a poll; stopped, nothing answers")
    func behindTheDatabase() throws {
        let connection = try database.connect()
        defer { connection.close() }
        let userID = try connection.transaction {
            try AppleAccounts.signIn(
                AppleSignIn(teamID: "TEAM", sub: "cache", audience: "com.example.app"), newUserID: TestIDs.next, on: connection)
        }.userID
        let sessions = try (0..<3).map { _ in
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: nil, device: nil, refreshTokenHash: nil, cookieHash: nil, lifetime: 3600,
                on: connection)
        }
        let cache = SessionCache(database: database.configuration)
        defer { cache.stop() }
        for session in sessions {
            let left = try #require(try Sessions.secondsLeft(sessionID: session, userID: userID, on: connection))
            #expect((3590...3600).contains(left))
            cache.remember(userID: userID, sessionID: session, secondsLeft: left, readStartedAt: SessionCache.now())
        }
        #expect(eventually(within: 2) { cache.isKnownActive(userID: userID, sessionID: sessions[0]) }, "known once the poller ran")
        #expect(!cache.isKnownActive(userID: userID + 1, sessionID: sessions[0]), "another user's id with the session")
        // Revoked by "another process": only the revocation log tells this cache.
        _ = try connection.transaction { try Sessions.revoke(sessions[0], reason: "logout", on: connection) }
        #expect(eventually(within: 1) { !cache.isKnownActive(userID: userID, sessionID: sessions[0]) })
        #expect(cache.isKnownActive(userID: userID, sessionID: sessions[1]), "the user's other sessions stay")
        _ = try connection.transaction { try Sessions.revokeAll(of: userID, reason: "apple_consent_revoked", on: connection) }
        #expect(eventually(within: 1) { !cache.isKnownActive(userID: userID, sessionID: sessions[1]) })
        // A read that began before the last revocations could have been answered before them.
        cache.remember(userID: userID, sessionID: sessions[2], secondsLeft: 3600, readStartedAt: SessionCache.now() - 2)
        #expect(!cache.isKnownActive(userID: userID, sessionID: sessions[2]))
        cache.remember(userID: userID, sessionID: sessions[2], secondsLeft: 3600, readStartedAt: SessionCache.now())
        #expect(cache.isKnownActive(userID: userID, sessionID: sessions[2]), "within the revocations' window it is forgotten again")
        #expect(eventually(within: 1) { !cache.isKnownActive(userID: userID, sessionID: sessions[2]) })
        cache.remember(userID: userID, sessionID: 999, secondsLeft: 3600, readStartedAt: SessionCache.now())
        cache.stop()
        #expect(!cache.isKnownActive(userID: userID, sessionID: 999), "a stopped cache answers nothing")
    }
}
