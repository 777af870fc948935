import Accounts
import FastCGI
import Foundation
import Identity
import JOSE
import Logging
import MariaDB
import SIWAFixtures
import SIWATestSupport
import Server
import StrictJSON
import Testing

/// The operator's levers (`siwa admin`'s operations) and the user's own export, in process through
/// the handlers, with real Apple identity tokens at their own clocks.
@Suite(.serialized) struct AdminTests {
    /// A signed-in user with something in every table: an Apple token (through a code), a second
    /// session, synced progress, an achievement and a profile.
    struct SignedIn {
        let userID: UInt64
        let access: String
        let refresh: String
        let secrets: [String]
    }

    func signInWithData(_ harness: HandlerHarness) throws -> SignedIn {
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        harness.issued.issue("code-of-alice", subject: real.sub, audience: real.aud)
        let first = harness.signIn(real.token, code: "code-of-alice", at: real.suggested_fixed_clock, extra: #""device":"Alice's iPhone""#)
        #expect(first.status == 200, "\(first.text)")
        let body = try first.json()
        let access = try #require(try body.string("accessToken"))
        let refresh = try #require(try body.string("refreshToken"))
        let second = harness.signIn(real.token, at: real.suggested_fixed_clock, extra: #""device":"Alice's iPad""#)
        #expect(second.status == 200)
        let sync = harness.send(
            "POST", "/sync",
            json: #"""
                {"cursor":null,"profile":{"totalXp":120,"currentLevel":2,"streakDays":3,"lastActiveDate":"2023-01-01"},
                 "progress":[{"beliefSystemId":"stoicism","lessonId":"lesson-1","status":"completed","score":90,"earnedXp":120,"completedAt":1672531200000}],
                 "achievements":[{"achievementId":"first-lesson","progress":1,"completed":true,"completedAt":1672531200000}]}
                """#, headers: harness.bearer(access))
        #expect(sync.status == 200, "\(sync.text)")
        let userID = UInt64(try #require(try body.object("user")?.string("id")))!
        let secrets = [
            real.token, "code-of-alice", access, refresh, try #require(try second.json().string("accessToken")),
            try #require(try second.json().string("refreshToken")), "r.\(real.aud).1",
        ]
        return SignedIn(userID: userID, access: access, refresh: refresh, secrets: secrets)
    }

    func admin(_ harness: HandlerHarness) -> AdminUseCases {
        AdminUseCases(
            context: WorkerContext(
                core: harness.application.core, database: harness.database.configuration, logger: Logger(label: "admin-tests")))
    }

    @Test(
        "Disabling ends every session at once (401 at /auth/me, /sync and refresh), sign-in gets 403 user_disabled, nothing is deleted; enabling restores sign-in"
    )
    func disableAndEnable() throws {
        let harness = try HandlerHarness()
        let alice = try signInWithData(harness)
        let admin = admin(harness)
        defer { admin.context.close() }
        let ended = try #require(try admin.disableUser(alice.userID, reason: "abuse report 42", by: "alice-operator"))
        #expect(ended.count == 2)
        #expect(try admin.disableUser(999_999, reason: nil, by: "x") == nil)
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(alice.access)).status == 401)
        #expect(harness.send("POST", "/sync", json: #"{"cursor":null}"#, headers: harness.bearer(alice.access)).status == 401)
        #expect(harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(alice.refresh)"}"#).status == 401)
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let refused = harness.signIn(real.token, at: real.suggested_fixed_clock)
        #expect(refused.status == 403)
        #expect(try refused.json().string("error") == "user_disabled")
        // Nothing is deleted, and the refused sign-in opened no session.
        #expect(try harness.count("SELECT COUNT(*) FROM users WHERE id = ? AND disabled_reason = 'abuse report 42'", alice.userID) == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records WHERE collection = 'progress' AND user_id = ?", alice.userID) == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_tokens") == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM sessions WHERE user_id = ? AND revoked_at IS NULL", alice.userID) == 0)
        #expect(try harness.count("SELECT COUNT(*) FROM sessions WHERE user_id = ?", alice.userID) == 2)
        let audit = try admin.auditEvents(userID: alice.userID, limit: 10)
        #expect(audit.first?.type == "admin_disable")
        #expect(audit.first?.detail?.contains("alice-operator") == true)
        #expect(try admin.findUsers(String(alice.userID), by: "alice-operator").first?.isDisabled == true)

        #expect(try admin.enableUser(alice.userID, by: "alice-operator"))
        let again = harness.signIn(real.token, at: real.suggested_fixed_clock)
        #expect(again.status == 200, "\(again.text)")
        #expect(try again.json().bool("isNewUser") == false)
        #expect(try admin.auditEvents(userID: alice.userID, limit: 10).contains { $0.type == "admin_enable" })
    }

    @Test("The export holds every stored item and no token, token hash, code or nonce; more than 5 an hour get 429 with Retry-After")
    func export() throws {
        let harness = try HandlerHarness()
        let alice = try signInWithData(harness)
        let response = harness.send("GET", "/auth/account/export", headers: harness.bearer(alice.access))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("Content-Disposition") == #"attachment; filename="account-\#(alice.userID).json""#)
        #expect(response.header("Cache-Control") == "no-store")
        let export = try response.json()
        #expect(try export.object("user")?.string("id") == String(alice.userID))
        #expect(try export.objectArray("emails")?.count == 1)
        let identity = try #require(try export.objectArray("appleIdentities")?.first)
        #expect(try identity.string("sub") == AppleFixtures.token("fqauth-YuyXoY-2022-signup").sub)
        #expect(response.text.contains(#""appleTokenHeldFor":["\#(HandlerHarness.bundleID)"]"#))
        #expect(try export.objectArray("sessions")?.compactMap { try $0.string("device") }.sorted() == ["Alice's iPad", "Alice's iPhone"])
        let sync = try #require(try export.object("sync"))
        #expect(try sync.objectArray("progress")?.first?.string("lessonId") == "lesson-1")
        #expect(try sync.objectArray("achievements")?.first?.string("achievementId") == "first-lesson")
        #expect(try sync.object("profile")?.integer("totalXp") == 120)
        let events = try #require(try export.objectArray("auditEvents")).compactMap { try $0.string("type") }
        #expect(events.contains("sign_in") && events.contains("account_exported"))

        // No secret of the test, nor anything stored that stands for one, in any form.
        var stored: [[UInt8]] = try harness.connection.query("SELECT token_hash FROM refresh_tokens").map { try $0.decode(at: 0) }
        stored += try harness.connection.query("SELECT token FROM apple_tokens").map { try $0.decode(at: 0) }
        #expect(stored.count == 3, "the two sessions' refresh tokens and Apple's token")
        for secret in alice.secrets {
            #expect(!response.text.contains(secret), "the export holds \(secret.prefix(12))…")
            stored.append(SHA256.hash(Array(secret.utf8)))
        }
        for bytes in stored {
            for form in [hexString(bytes), Base64URL.encode(bytes), Data(bytes).base64EncodedString()] {
                #expect(!response.text.contains(form), "the export holds a stored secret's \(form.prefix(12))…")
            }
        }

        for _ in 2...5 { #expect(harness.send("GET", "/auth/account/export", headers: harness.bearer(alice.access)).status == 200) }
        let limited = harness.send("GET", "/auth/account/export", headers: harness.bearer(alice.access))
        #expect(limited.status == 429)
        #expect(try limited.json().string("error") == "export_limited")
        let wait = try #require(limited.header("Retry-After").flatMap(Int.init))
        #expect((1...3600).contains(wait))
        #expect(harness.send("GET", "/auth/account/export").status == 401)
    }

    @Test("Operators find users by id, email and sub; end one session; delete a user, each recorded with their name")
    func findRevokeDelete() throws {
        let harness = try HandlerHarness()
        let alice = try signInWithData(harness)
        let admin = admin(harness)
        defer { admin.context.close() }
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let email: String = try harness.connection.query("SELECT address FROM user_emails WHERE user_id = ?", alice.userID)[0].decode(at: 0)
        for query in [String(alice.userID), email, real.sub] {
            #expect(try admin.findUsers(query, by: "bob-operator").map(\.userID) == [alice.userID], "\(query)")
        }
        #expect(try admin.findUsers("nobody@example.com", by: "bob-operator").isEmpty)
        #expect(try admin.findUsers("42424242", by: "bob-operator").isEmpty)

        let session: UInt64 = try harness.connection.query(
            "SELECT id FROM sessions WHERE user_id = ? AND device = 'Alice''s iPhone'", alice.userID)[0].decode(at: 0)
        #expect(try admin.revokeSession(session, by: "bob-operator"))
        #expect(try !admin.revokeSession(session, by: "bob-operator"), "already ended")
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(alice.access)).status == 401)
        #expect(try admin.auditEvents(userID: alice.userID, limit: 5).first?.type == "admin_revoke_session")

        #expect(try admin.deleteUser(alice.userID, by: "bob-operator"))
        #expect(try !admin.deleteUser(alice.userID, by: "bob-operator"))
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        let deletion = try admin.auditEvents(userID: alice.userID, limit: 5).first { $0.type == "admin_delete" }
        #expect(deletion?.detail?.contains("bob-operator") == true)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_revocations") == 1, "Apple's token queued for revocation")
    }

    @Test(
        "Operators name a user by id, Apple sub or email (a relay address too); an unknown or shared one is refused; show, export and find are each recorded with the operator's name before the data is handed back"
    )
    func lookUpAndRecordedReads() throws {
        let harness = try HandlerHarness()
        let alice = try signInWithData(harness)
        let admin = admin(harness)
        defer { admin.context.close() }
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let email: String = try harness.connection.query("SELECT address FROM user_emails WHERE user_id = ?", alice.userID)[0].decode(at: 0)
        for reference in [String(alice.userID), real.sub, email, " \(email) "] {
            #expect(try admin.lookUpUser(reference) == .one(alice.userID), "\(reference)")
        }
        #expect(try admin.lookUpUser("nobody@privaterelay.appleid.com") == .none)
        #expect(try admin.lookUpUser("424242") == .none)
        #expect(try admin.lookUpUser("000000.00000000000000000000000000000000.0000") == .none)
        // A relay address, and an address two accounts gave: one user, then both.
        let bob = alice.userID + 1000
        _ = try harness.connection.execute("INSERT INTO users (id) VALUES (?)", bob)
        _ = try harness.connection.execute(
            "INSERT INTO user_emails (user_id, address, is_private_relay, verified) VALUES (?, 'abcdefghij@privaterelay.appleid.com', 1, 1)",
            bob)
        #expect(try admin.lookUpUser("abcdefghij@privaterelay.appleid.com") == .one(bob))
        _ = try harness.connection.execute(
            "INSERT INTO user_emails (user_id, address, is_private_relay, verified) VALUES (?, ?, 0, 1)", bob, email)
        #expect(try admin.lookUpUser(email) == .several([alice.userID, bob]))

        let shown = try #require(try admin.show(userID: alice.userID, by: "carol (as root)"))
        #expect(shown.record.userID == alice.userID)
        #expect(shown.record.auditEvents.first?.type == "admin_show", "recorded before the data is read")
        let exported = try #require(try admin.exportUser(userID: alice.userID, by: "root"))
        #expect(exported.record.userID == alice.userID)
        #expect(try admin.show(userID: 999_999, by: "root") == nil)
        #expect(try admin.exportUser(userID: 999_999, by: "root") == nil)
        _ = try admin.findUsers(email, by: "dave")
        let events = try admin.auditEvents(userID: nil, limit: 10)
        let recorded = events.compactMap { event in event.detail.map { "\(event.type) \(event.userID ?? 0) \($0)" } }
        #expect(recorded.contains(#"admin_show \#(alice.userID) {"operator":"carol (as root)"}"#), "\(recorded)")
        #expect(recorded.contains(#"admin_export \#(alice.userID) {"operator":"root"}"#), "\(recorded)")
        #expect(recorded.contains(#"admin_find \#(alice.userID) {"operator":"dave"}"#), "\(recorded)")
        #expect(recorded.contains(#"admin_find \#(bob) {"operator":"dave"}"#), "\(recorded)")
        #expect(!events.contains { $0.userID == 999_999 }, "nothing recorded for a user that does not exist")
        // The operator's export is not the user's own: it takes none of their five an hour.
        #expect(try harness.count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'account_exported'") == 0)
    }
}
