import Accounts
import FastCGI
import Foundation
import Identity
import JOSE
import MariaDB
import SIWATestSupport
import Server
import StrictJSON
import Synchronization
import Testing

/// Guest accounts, link tokens and sign-ins carrying `transfer_sub`, in process through the
/// handlers against a real database, with identity tokens signed by the harness's key.
@Suite(.serialized) struct AccountLinkTests {
    /// A native identity token for `sub` (the harness requires no nonce).
    func token(_ harness: HandlerHarness, sub: String, transferSub: String? = nil) throws -> String {
        let now = Int64(harness.clock.now())
        let claims = JSONText.object([
            ("iss", .string("https://appleid.apple.com")), ("aud", .string(HandlerHarness.bundleID)), ("exp", .integer(now + 600)),
            ("iat", .integer(now)), ("sub", .string(sub)), ("transfer_sub", transferSub.map { .string($0) }),
            ("auth_time", .integer(now)),
        ])
        let header = JSONText.object([("kid", .string(HandlerHarness.webKeyID)), ("alg", .string("RS256"))])
        return try CompactJWS.serialize(header: header, claims: claims, sign: harness.webKey.signature(for:))
    }

    func signIn(_ harness: HandlerHarness, sub: String, bearer: String? = nil, linkToken: String? = nil, transferSub: String? = nil) throws
        -> Response
    {
        let link = linkToken.map { #","linkToken":"\#($0)""# } ?? ""
        return harness.send(
            "POST", "/auth/apple", json: #"{"identityToken":"\#(try token(harness, sub: sub, transferSub: transferSub))"\#(link)}"#,
            headers: bearer.map { harness.bearer($0) } ?? [])
    }

    func guest(_ harness: HandlerHarness) throws -> (access: String, userID: String) {
        let response = harness.send("POST", "/auth/guest")
        #expect(response.status == 200, "\(response.text)")
        let body = try response.json()
        return (try #require(try body.string("accessToken")), try #require(try body.object("user")?.string("id")))
    }

    func sync(_ harness: HandlerHarness, _ access: String, lesson: String) -> Response {
        harness.send(
            "POST", "/sync",
            json: #"{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"\#(lesson)","status":"completed","score":5}]}"#,
            headers: harness.bearer(access))
    }

    @Test("Guest accounts are off by default: 403 guests_disabled, no user made")
    func guestsOffByDefault() throws {
        let harness = try HandlerHarness()
        let response = harness.send("POST", "/auth/guest", json: #"{"device":"phone"}"#)
        #expect(response.status == 403)
        #expect(try response.json().string("error") == "guests_disabled")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
    }

    @Test(
        "A guest syncs, signs in with Apple holding the guest session and stays one user with the progress; the same Apple ID with another guest is 409 identity_in_use and changes nothing"
    )
    func guestUpgrade() throws {
        let harness = try HandlerHarness(environment: ["SIWA_GUEST_ACCOUNTS": "true"])
        let first = try guest(harness)
        #expect(sync(harness, first.access, lesson: "g1").status == 200)
        let upgraded = try signIn(harness, sub: "guest.apple.1", bearer: first.access)
        #expect(upgraded.status == 200, "\(upgraded.text)")
        let user = try #require(try upgraded.json().object("user"))
        #expect(try user.string("id") == first.userID && user.bool("guest") == false)
        #expect(try upgraded.json().bool("isNewUser") == false)
        #expect(
            try harness.count("SELECT COUNT(*) FROM sync_records WHERE collection = 'progress' AND user_id = ?", UInt64(first.userID)!) == 1
        )
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 1)

        let second = try guest(harness)
        #expect(sync(harness, second.access, lesson: "o1").status == 200)
        let refused = try signIn(harness, sub: "guest.apple.1", bearer: second.access)
        #expect(refused.status == 409)
        #expect(try refused.json().string("error") == "identity_in_use")
        #expect(try harness.count("SELECT COUNT(*) FROM users WHERE id = ? AND guest_since IS NOT NULL", UInt64(second.userID)!) == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities") == 1)
        #expect(
            try harness.count("SELECT COUNT(*) FROM sync_records WHERE collection = 'progress' AND user_id = ?", UInt64(second.userID)!)
                == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM sessions WHERE user_id = ?", UInt64(second.userID)!) == 1)
        // A retry of the upgrade whose answer was lost: an ordinary sign-in, the same user.
        let retried = try signIn(harness, sub: "guest.apple.1", bearer: first.access)
        #expect(try retried.json().object("user")?.string("id") == first.userID)
        // An expired or forged guest token is refused before Apple's token is even looked at.
        #expect(try signIn(harness, sub: "guest.apple.2", bearer: "not-a-token").status == 401)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities") == 1)
    }

    @Test(
        "Ten sign-ins with different Apple IDs upgrade one guest at once, on ten worker threads: one attaches, nine get 409 guest_linked, no user is made"
    )
    func concurrentGuestUpgrades() throws {
        let harness = try HandlerHarness(environment: ["SIWA_GUEST_ACCOUNTS": "true"])
        let guest = try guest(harness)
        let bodies = try (0..<10).map { index in #"{"identityToken":"\#(try token(harness, sub: "guest.many." + String(index)))"}"# }
        let answers = Mutex<[String]>([])
        let application = harness.application
        DispatchQueue.concurrentPerform(iterations: 10) { index in
            let worker = application.makeWorker(index: index + 1)
            defer { worker.close() }
            let headers = HTTPHeaders([("content-type", "application/json"), ("authorization", "Bearer " + guest.access)])
            let response = worker.respond(
                to: Request(method: "POST", path: "/auth/apple", headers: headers, body: Array(bodies[index].utf8)))
            let answer = response.status == 200 ? (try? response.json().object("user")?.string("id")) ?? "?" : response.text
            answers.withLock { $0.append("\(response.status) \(answer)") }
        }
        let sorted = answers.withLock { $0.sorted() }
        #expect(sorted.first == "200 \(guest.userID)", "\(sorted)")
        #expect(sorted.dropFirst().allSatisfy { $0.hasPrefix("409 ") && $0.contains("guest_linked") }, "\(sorted)")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities") == 1)
        // Afterwards too: the upgraded guest's token with yet another Apple ID.
        let late = try signIn(harness, sub: "guest.many.late", bearer: guest.access)
        #expect(late.status == 409)
        #expect(try late.json().string("error") == "guest_linked", "\(late.text)")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 1)
    }

    @Test("siwa jobs purges guests unused for the retention days, with user.deleted; upgraded users and recent guests stay")
    func guestPurge() throws {
        let harness = try HandlerHarness(environment: ["SIWA_GUEST_ACCOUNTS": "true", "SIWA_GUEST_RETENTION_DAYS": "30"])
        let stale = try guest(harness)
        let recent = try guest(harness)
        let upgraded = try guest(harness)
        #expect(try signIn(harness, sub: "purge.apple.1", bearer: upgraded.access).status == 200)
        for id in [stale.userID, upgraded.userID] {
            _ = try harness.connection.execute(
                "UPDATE users SET guest_since = IF(guest_since IS NULL, NULL, UTC_TIMESTAMP(3) - INTERVAL 31 DAY) WHERE id = ?", UInt64(id)!
            )
            _ = try harness.connection.execute(
                "UPDATE sessions SET last_used_at = UTC_TIMESTAMP(3) - INTERVAL 31 DAY WHERE user_id = ?", UInt64(id)!)
        }
        let jobs = try #require(try harness.jobs())
        #expect(try jobs.runOnce().guestsPurged == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM users WHERE id = ?", UInt64(stale.userID)!) == 0)
        #expect(try harness.count("SELECT COUNT(*) FROM users WHERE id IN (?, ?)", UInt64(recent.userID)!, UInt64(upgraded.userID)!) == 2)
        #expect(try jobs.runOnce().guestsPurged == 0)
    }

    @Test(
        "Link tokens: server to server only; a sign-in with one attaches the Apple ID to the external user; used, expired, unknown, and conflicting ones are refused and change nothing"
    )
    func linkTokens() throws {
        let secretFile = NSTemporaryDirectory() + "link-secret-" + UUID().uuidString
        let secret = String(repeating: "s3cret", count: 6)
        #expect(FileManager.default.createFile(atPath: secretFile, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]))
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        #expect(try HandlerHarness().send("POST", "/internal/link-tokens", json: #"{"externalId":"42"}"#).status == 401)
        let off = try HandlerHarness()
        #expect(off.send("POST", "/internal/link-tokens", json: #"{"externalId":"42"}"#, headers: off.bearer(secret)).status == 404)
        let harness = try HandlerHarness(environment: ["SIWA_LINK_SECRET_FILE": secretFile])
        func mint(_ externalID: String, secret presented: String = secret, headers: [(String, String)] = []) -> Response {
            harness.send(
                "POST", "/internal/link-tokens", json: #"{"externalId":"\#(externalID)"}"#, headers: harness.bearer(presented) + headers)
        }
        #expect(mint("42", secret: secret + "x").status == 401)
        #expect(mint("42", headers: [("origin", HandlerHarness.publicURL)]).status == 403)
        #expect(mint("42", headers: [("cookie", "a=b")]).status == 403)
        #expect(mint(" 42").status == 400)
        let minted = mint("legacy-42")
        #expect(minted.status == 201, "\(minted.text)")
        let link = try #require(try minted.json().string("linkToken"))
        #expect(try minted.json().integer("expiresIn") == 600)

        let linked = try signIn(harness, sub: "link.apple.1", linkToken: link)
        #expect(linked.status == 200, "\(linked.text)")
        let user = try #require(try linked.json().object("user"))
        #expect(try user.string("externalId") == "legacy-42" && linked.json().bool("isNewUser") == true)
        let access = try #require(try linked.json().string("accessToken"))
        #expect(
            try harness.send("GET", "/auth/me", headers: harness.bearer(access)).json().object("user")?.string("externalId") == "legacy-42")

        func refused(_ response: Response, _ status: Int, _ code: String) throws {
            #expect(response.status == status, "\(response.text)")
            #expect(try response.json().string("error") == code)
        }
        let before = try harness.count("SELECT COUNT(*) FROM users") * 100 + harness.count("SELECT COUNT(*) FROM apple_identities")
        try refused(try signIn(harness, sub: "link.apple.1", linkToken: link), 409, "link_token_used")
        let expired = try #require(try mint("legacy-43").json().string("linkToken"))
        _ = try harness.connection.execute(
            "UPDATE link_tokens SET expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE external_id = 'legacy-43'")
        try refused(try signIn(harness, sub: "link.apple.2", linkToken: expired), 401, "link_token_expired")
        try refused(try signIn(harness, sub: "link.apple.2", linkToken: String(repeating: "A", count: 43)), 401, "invalid_link_token")
        try refused(try signIn(harness, sub: "link.apple.2", linkToken: "short"), 401, "invalid_link_token")
        let again = try #require(try mint("legacy-42").json().string("linkToken"))
        try refused(try signIn(harness, sub: "link.apple.2", linkToken: again), 409, "external_user_linked")
        let other = try #require(try mint("legacy-77").json().string("linkToken"))
        try refused(try signIn(harness, sub: "link.apple.1", linkToken: other), 409, "identity_in_use")
        #expect(try harness.count("SELECT COUNT(*) FROM users") * 100 + harness.count("SELECT COUNT(*) FROM apple_identities") == before)
        #expect(
            try harness.count("SELECT COUNT(*) FROM link_tokens WHERE used_at IS NULL AND external_id IN ('legacy-42', 'legacy-77')") == 2)

        // An Apple ID whose user has no external id yet takes the one of its link token.
        #expect(try signIn(harness, sub: "link.apple.3").status == 200)
        let late = try signIn(harness, sub: "link.apple.3", linkToken: other)
        #expect(late.status == 200, "\(late.text)")
        #expect(try late.json().object("user")?.string("externalId") == "legacy-77" && late.json().bool("isNewUser") == false)
        // With a link token, a Bearer sent along is not used: the link token decides the account.
        let fresh = try mint("legacy-88").json().string("linkToken")
        let both = try signIn(harness, sub: "link.apple.4", bearer: access, linkToken: fresh)
        #expect(both.status == 200, "\(both.text)")
        #expect(try both.json().object("user")?.string("externalId") == "legacy-88")
    }

    @Test(
        "A sign-in whose token carries a transfer_sub stored by siwa transfer prepare lands on the sending team's user, and resolves the record"
    )
    func transferSubSignIn() throws {
        let harness = try HandlerHarness()
        let userID = try harness.connection.execute("INSERT INTO users (first_name) VALUES ('Old')").lastInsertID
        let oldIdentity = try harness.connection.execute(
            "INSERT INTO apple_identities (user_id, team_id, sub, audience) VALUES (?, 'TEAMOLD001', 'old.sub', ?)", userID,
            HandlerHarness.bundleID
        ).lastInsertID
        try AppleTransfers.recordMinted(oldIdentity, target: "TEAMID1234", transferSub: "transfer.sub.1", on: harness.connection)
        let elsewhere = try harness.connection.execute(
            "INSERT INTO apple_identities (user_id, team_id, sub, audience) VALUES (?, 'TEAMOLD001', 'old.sub.2', ?)", userID,
            HandlerHarness.bundleID
        ).lastInsertID
        try AppleTransfers.recordMinted(elsewhere, target: "TEAMOTHER1", transferSub: "transfer.sub.2", on: harness.connection)
        // A transfer_sub minted for another team is not matched: a new user.
        let stranger = try signIn(harness, sub: "stranger.sub", transferSub: "transfer.sub.2")
        #expect(try stranger.json().bool("isNewUser") == true)
        let response = try signIn(harness, sub: "new.team.sub", transferSub: "transfer.sub.1")
        #expect(response.status == 200, "\(response.text)")
        #expect(try response.json().object("user")?.string("id") == String(userID) && response.json().bool("isNewUser") == false)
        #expect(
            try harness.count("SELECT COUNT(*) FROM apple_transfers WHERE identity_id = ? AND resolved_at IS NOT NULL", oldIdentity) == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE user_id = ?", userID) == 3)
        // Later, without transfer_sub, the new sub alone finds the same user.
        #expect(try signIn(harness, sub: "new.team.sub").json().object("user")?.string("id") == String(userID))
    }
}
