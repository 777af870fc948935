import Accounts
import Foundation
import Identity
import MariaDB
import SIWATestSupport
import Server
import Testing

/// Users from Apple identities, on a schema migrated with the project's own migrations.
@Suite final class AppleAccountsTests: MigratedSchemaSuite {
    func signIn(_ signIn: AppleSignIn) throws -> SignedInAccount {
        try connection.transaction { try AppleAccounts.signIn(signIn, newUserID: TestIDs.next, on: connection) }
    }

    func count(_ table: String) throws -> Int { try connection.query("SELECT COUNT(*) FROM \(raw: table)")[0].decode(at: 0) }

    @Test("A first sign-in creates the user with name and relay email; the next finds the same user and keeps what it does not repeat")
    func newThenReturning() throws {
        let first = try signIn(
            AppleSignIn(
                teamID: "TEAM", sub: "001.abc.0001", audience: "com.example.app", email: "x1y2z3@privaterelay.appleid.com",
                emailVerified: true, isPrivateEmail: true, firstName: "  Jane\u{0007} ", lastName: "Appleseed"))
        #expect(first.isNewUser)
        let again = try signIn(AppleSignIn(teamID: "TEAM", sub: "001.abc.0001", audience: "com.example.web", firstName: "", lastName: nil))
        #expect(again == SignedInAccount(userID: first.userID, isNewUser: false))
        let user = try connection.query("SELECT first_name, last_name FROM users WHERE id = ?", first.userID)[0]
        #expect(try user.decode(String.self, at: 0) == "Jane", "trimmed, control characters removed, not replaced by an empty name")
        #expect(try user.decode(String.self, at: 1) == "Appleseed")
        let email = try connection.query("SELECT address, is_private_relay, verified FROM user_emails WHERE user_id = ?", first.userID)
        #expect(email.count == 1, "a sign-in without email keeps the stored one")
        #expect(try email[0].decode(Bool.self, at: 1))
        let audience: String = try connection.query("SELECT audience FROM apple_identities WHERE user_id = ?", first.userID)[0].decode(
            at: 0)
        #expect(audience == "com.example.web")
    }

    @Test("Forwarding changes only for the user's relay address; another address changes nothing and says so")
    func forwardingByAddress() throws {
        let user = try signIn(
            AppleSignIn(
                teamID: "TEAM", sub: "001.fwd.0001", audience: "com.example.app", email: "relay1@privaterelay.appleid.com",
                isPrivateEmail: true)
        ).userID
        func forwarding() throws -> Bool { try connection.query("SELECT forwarding_enabled FROM user_emails")[0].decode(at: 0) }
        #expect(
            try !AppleNotifications.setForwarding(userID: user, address: "other@privaterelay.appleid.com", enabled: false, on: connection))
        #expect(try forwarding(), "another address changed nothing")
        #expect(
            try AppleNotifications.setForwarding(userID: user, address: "relay1@privaterelay.appleid.com", enabled: false, on: connection))
        #expect(try !forwarding())
        #expect(
            try AppleNotifications.setForwarding(userID: user, address: "relay1@privaterelay.appleid.com", enabled: false, on: connection),
            "already off: still the user's address")
        #expect(try AppleNotifications.setForwarding(userID: user, address: nil, enabled: true, on: connection))
        #expect(try forwarding())
    }

    @Test("Never linked by email: another sub with the same address is another user; email_verified false stays false")
    func neverLinkByEmail() throws {
        let one = try signIn(AppleSignIn(teamID: "TEAM", sub: "sub-1", audience: "a", email: "same@example.com", emailVerified: true))
        let two = try signIn(AppleSignIn(teamID: "TEAM", sub: "sub-2", audience: "a", email: "same@example.com", emailVerified: false))
        #expect(one.userID != two.userID)
        #expect(two.isNewUser)
        let verified: Bool = try connection.query("SELECT verified FROM user_emails WHERE user_id = ?", two.userID)[0].decode(at: 0)
        #expect(!verified)
        let otherTeam = try signIn(AppleSignIn(teamID: "TEAM2", sub: "sub-1", audience: "a"))
        #expect(otherTeam.userID != one.userID, "sub is scoped by team")
    }

    @Test("A sign-in that fails half-way writes nothing")
    func atomic() throws {
        let tooLong = String(repeating: "a", count: 300)
        #expect(throws: MariaDBError.self) {
            try signIn(AppleSignIn(teamID: "TEAM", sub: "sub-x", audience: tooLong, firstName: "Jane"))
        }
        #expect(try count("users") == 0)
        #expect(try count("apple_identities") == 0)
    }

    @Test("A nonce is accepted once, across connections")
    func nonceOnce() throws {
        let other = try database.connect()
        defer { other.close() }
        let hash = [UInt8](repeating: 7, count: 32)
        #expect(try Nonces.consume(hash: hash, expiresAt: 4_070_908_800, on: connection))
        #expect(try !Nonces.consume(hash: hash, expiresAt: 4_070_908_800, on: other))
        #expect(try Nonces.consume(hash: [UInt8](repeating: 8, count: 32), expiresAt: 946_684_800, on: other))
        #expect(try GrowingTable.usedNonces.purge(olderThan: 0, limit: 10, on: connection) == 1)
    }

    @Test("A nonce claimed with the COMMIT: used before, it fails the whole transaction, and the writes sent with it are not kept")
    func nonceWithCommit() throws {
        let hash = [UInt8](repeating: 9, count: 32)
        func signInClaiming(_ sub: String) throws {
            try connection.transaction {
                _ = try AppleAccounts.signIn(
                    AppleSignIn(teamID: "TEAM", sub: sub, audience: "com.example.app"), newUserID: TestIDs.next, on: connection)
                try Nonces.consumeWithNext(hash: hash, expiresAt: 4_070_908_800, on: connection)
            }
        }
        try signInClaiming("first")
        do {
            try signInClaiming("second")
            Issue.record("a reused nonce was accepted")
        } catch let error as MariaDBError {
            #expect(Nonces.isReuse(error), "\(error)")
        }
        #expect(try count("users") == 1)
        #expect(try count("apple_identities") == 1)
        #expect(try count("used_nonces") == 1)
    }
}
