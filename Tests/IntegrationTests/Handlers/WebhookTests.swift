import AccountData
import Accounts
import FastCGI
import Foundation
import Identity
import JOSE
import MariaDB
import SIWAFixtures
import SIWATestSupport
import StrictJSON
import Synchronization
import Testing

/// The lifecycle webhooks through the handlers and `siwa jobs`: what each change records in the
/// outbox, and how deliveries are signed, ordered, retried, given up and sent again.
@Suite("Lifecycle webhooks", .serialized)
struct WebhookTests {
    static let secret = "0123456789abcdef0123456789abcdef-webhook-secret"

    /// A harness whose webhooks go to `endpoints`, signed with `secret`.
    static func harness(endpoints: [String]) throws -> HandlerHarness {
        try harness(endpoints: endpoints, bundleIDs: [HandlerHarness.bundleID, "com.gameroasters.stack4"])
    }

    static func harness(endpoints: [String], bundleIDs: [String]) throws -> HandlerHarness {
        let path = NSTemporaryDirectory() + "siwa-webhook-secret-" + UUID().uuidString
        guard
            FileManager.default.createFile(atPath: path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        return try HandlerHarness(
            bundleIDs: bundleIDs, environment: ["SIWA_WEBHOOK_URLS": endpoints.joined(separator: ","), "SIWA_WEBHOOK_SECRET_FILE": path])
    }

    /// The recorded events, oldest first: type and body.
    static func events(_ harness: HandlerHarness) throws -> [(type: String, body: JSONObject)] {
        try harness.connection.query("SELECT event_type, body FROM webhook_events ORDER BY id").map {
            (try $0.decode(at: 0), try JSONObject(parsing: try $0.decode(at: 1) as String))
        }
    }

    @Test("Each change records its event with the change: created, sessions revoked (three reasons), consent revoked, deleted")
    func outbox() throws {
        let harness = try WebhookTests.harness(endpoints: ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"])
        let signup = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let signin = try AppleFixtures.token("fqauth-YuyXoY-2022-signin")
        let first = try harness.signIn(signup.token, at: signup.suggested_fixed_clock).json()
        let second = try harness.signIn(signin.token, at: signin.suggested_fixed_clock).json()
        let userID = try #require(try first.object("user")?.string("id"))
        let firstSession = try #require(try first.string("sessionId"))
        let secondAccess = try #require(try second.string("accessToken"))
        #expect(harness.send("DELETE", "/auth/sessions/\(firstSession)", headers: harness.bearer(secondAccess)).status == 204)
        #expect(harness.send("DELETE", "/auth/sessions/\(firstSession)", headers: harness.bearer(secondAccess)).status == 404)
        // A spent refresh token presented again ends its session: `lost` is retired by the retry of
        // the token it replaced, so presenting it is reuse.
        let refresh = try #require(try second.string("refreshToken"))
        let rotated = harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#)
        let lost = try #require(try rotated.json().string("refreshToken"))
        #expect(harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#).status == 200)
        #expect(harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(lost)"}"#).status == 401)
        let third = try harness.signIn(signin.token, at: signin.suggested_fixed_clock).json()
        #expect(harness.send("POST", "/auth/logout", headers: harness.bearer(try #require(try third.string("accessToken")))).status == 204)
        let fourth = try harness.signIn(signin.token, at: signin.suggested_fixed_clock).json()
        let notification = try AppleFixtures.notification("notif-fqauth-consent-revoked-2022")
        harness.clock.set(notification.suggested_fixed_clock)
        #expect(harness.send("POST", "/webhook/apple", json: #"{"payload":"\#(notification.payload_jwt)"}"#).status == 200)
        #expect(harness.send("POST", "/webhook/apple", json: #"{"payload":"\#(notification.payload_jwt)"}"#).status == 200)
        let fifth = try harness.signIn(signin.token, at: signin.suggested_fixed_clock).json()
        #expect(
            harness.send("DELETE", "/auth/account", headers: harness.bearer(try #require(try fifth.string("accessToken")))).status == 204)

        let events = try WebhookTests.events(harness)
        #expect(
            events.map(\.type) == [
                "user.created", "session.revoked", "session.revoked", "session.revoked", "apple.consent_revoked", "session.revoked",
                "user.deleted",
            ], "one event per change; a second sign-in, a 404 and a duplicate notification record nothing")
        let reasons = try events.filter { $0.type == "session.revoked" }.map { try $0.body.object("data")?.string("reason") }
        #expect(reasons == ["revoked_by_user", "refresh_token_reuse", "logout", "apple_consent_revoked"])
        let revoked = try events.filter { $0.type == "session.revoked" }.map { try $0.body.object("data")?.stringArray("sessionIds") }
        #expect(revoked.first == [firstSession])
        #expect(revoked.last == [try #require(try fourth.string("sessionId"))], "the one session still active")
        for (type, body) in events {
            #expect(try body.string("type") == type)
            #expect(try body.string("userId") == userID)
            #expect(try body.string("id")?.hasPrefix("evt_") == true && body.string("id")?.count == 36)
        }
        #expect(try events[0].body.object("data")?.string("flow") == "native")
        #expect(try events[0].body.integer("createdAt") == Int64(signup.suggested_fixed_clock))
        #expect(try events.last?.body.object("data")?.string("source") == "user")
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_deliveries") == events.count * 2, "one delivery per endpoint")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_events") == events.count, "the events outlive the user")
    }

    @Test("Without an endpoint nothing is recorded")
    func disabled() throws {
        let harness = try HandlerHarness()
        let signup = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let access = try #require(try harness.signIn(signup.token, at: signup.suggested_fixed_clock).json().string("accessToken"))
        #expect(harness.send("POST", "/auth/logout", headers: harness.bearer(access)).status == 204)
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_events") == 0)
        #expect(try #require(try harness.jobs()).runOnce().webhooks == WebhookSender.Outcome())
    }

    /// A receiver that answers 500 to the events of the users in `failing`, 200 to the rest.
    final class Receiver: Sendable {
        /// The user ids whose events get 500.
        final class FailingUsers: Sendable {
            let ids = Mutex<Set<String>>([])
            func withLock<T>(_ body: (inout Set<String>) -> T) -> T { ids.withLock { body(&$0) } }
        }

        let failing = FailingUsers()
        let server: TestHTTPServer

        init() throws {
            let failing = self.failing
            server = try TestHTTPServer { request in
                let user = (try? JSONObject(parsing: request.bodyText).string("userId")) ?? nil
                return TestHTTPServer.Response(status: failing.withLock { $0.contains(user ?? "") } ? 500 : 200)
            }
        }

        /// The events received, in order: event id, type, user id.
        var received: [(id: String, type: String, user: String)] {
            server.receivedRequests.compactMap { request in
                guard let body = try? JSONObject(parsing: request.bodyText) else { return nil }
                return (
                    (try? body.string("id")) ?? nil ?? "", (try? body.string("type")) ?? nil ?? "",
                    (try? body.string("userId")) ?? nil ?? ""
                )
            }
        }
    }

    /// Signs in with the real token `id` at its moment.
    static func signIn(_ harness: HandlerHarness, _ id: String) throws -> (userID: String, access: String) {
        let token = try AppleFixtures.token(id)
        let grant = try harness.signIn(token.token, at: token.suggested_fixed_clock).json()
        return (try #require(try grant.object("user")?.string("id")), try #require(try grant.string("accessToken")))
    }

    /// A harness whose webhooks go to `receiver`, its jobs, and Alice, who signed in and out.
    static func aliceSignedInAndOut(_ receiver: Receiver) throws -> (HandlerHarness, BackgroundJobs, (userID: String, access: String)) {
        let harness = try WebhookTests.harness(endpoints: [receiver.server.baseURL + "/hooks"])
        let jobs = try #require(try harness.jobs())
        let alice = try WebhookTests.signIn(harness, "fqauth-YuyXoY-2022-signup")
        #expect(harness.send("POST", "/auth/logout", headers: harness.bearer(alice.access)).status == 204)
        return (harness, jobs, alice)
    }

    @Test("Deliveries are signed, in order per user; a failing user's later events wait while other users' go; retries back off")
    func delivery() throws {
        let receiver = try Receiver()
        defer { receiver.server.stop() }
        let (harness, jobs, alice) = try WebhookTests.aliceSignedInAndOut(receiver)
        let bob = try WebhookTests.signIn(harness, "gameroasters-YuyXoY-2021")
        receiver.failing.withLock { $0 = [alice.userID] }

        let firstPass = try jobs.runOnce().webhooks
        #expect(firstPass.failed == 1 && firstPass.delivered == 1, "alice's logout waits behind her failed user.created; bob's goes")
        #expect(receiver.received.map(\.user) == [alice.userID, bob.userID])
        let delay: Int = try harness.connection.query(
            "SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), next_attempt_at) FROM webhook_deliveries WHERE state = 'pending' AND attempts = 1"
        )[0].decode(at: 0)
        #expect((8...10).contains(delay), "the first retry waits 10 s")
        #expect(try jobs.runOnce().webhooks == WebhookSender.Outcome(), "nothing is due before then")

        receiver.failing.withLock { $0 = [] }
        _ = try harness.connection.execute("UPDATE webhook_deliveries SET next_attempt_at = UTC_TIMESTAMP(3) WHERE state = 'pending'")
        #expect(try jobs.runOnce().webhooks.delivered == 2)
        let aliceEvents = receiver.received.filter { $0.user == alice.userID }.map(\.type)
        #expect(aliceEvents == ["user.created", "user.created", "session.revoked"], "in order, the first one twice")

        for request in receiver.server.receivedRequests {
            let header = try #require(request.headers["siwa-signature"])
            let parts = Dictionary(header.split(separator: ",").map { ($0.prefix { $0 != "=" }, $0.drop { $0 != "=" }.dropFirst()) }) { $1 }
            let time = try #require(parts["t"].flatMap { Int64($0) })
            #expect(time == Int64(harness.clock.now()), "signed at the moment of sending")
            let signed = Array("\(time).".utf8) + request.body
            #expect(
                parts["v1"].map(String.init)
                    == hexString(HMACSHA256.authenticationCode(key: Array(WebhookTests.secret.utf8), message: signed)))
            #expect(request.headers["content-type"] == "application/json")
            #expect(request.headers["siwa-event-id"] == (try JSONObject(parsing: request.bodyText).string("id")))
        }
        let log = try WebhookDeliveries.attempts(eventID: receiver.received[0].id, limit: 10, on: harness.connection)
        #expect(log.map(\.status) == [200, 500], "every attempt is logged, newest first")
        #expect(log.last?.error == "HTTP 500")
    }

    @Test("A delivery failing past the retry window is given up, the user's next events go ahead, and a redelivery sends it again")
    func givenUpAndRedelivered() throws {
        let receiver = try Receiver()
        defer { receiver.server.stop() }
        let (harness, jobs, alice) = try WebhookTests.aliceSignedInAndOut(receiver)
        receiver.failing.withLock { $0 = [alice.userID] }
        #expect(try jobs.runOnce().webhooks.failed == 1)
        _ = try harness.connection.execute(
            """
            UPDATE webhook_deliveries SET next_attempt_at = UTC_TIMESTAMP(3), pending_since = UTC_TIMESTAMP(3) - INTERVAL 73 HOUR
            WHERE attempts = 1
            """)
        // Failing once more, now past the window.
        let pass = try jobs.runOnce().webhooks
        #expect(pass.givenUp == 1 && pass.failed == 2, "given up; the logout behind it was tried next and failed")
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'failed'") == 1)
        receiver.failing.withLock { $0 = [] }
        _ = try harness.connection.execute("UPDATE webhook_deliveries SET next_attempt_at = UTC_TIMESTAMP(3) WHERE state = 'pending'")
        #expect(try jobs.runOnce().webhooks.delivered == 1, "the logout")
        #expect(try WebhookDeliveries.redeliver(eventIDs: nil, to: [receiver.server.baseURL + "/hooks"], on: harness.connection) == 1)
        #expect(try jobs.runOnce().webhooks.delivered == 1, "the user.created given up, sent again")
        #expect(receiver.received.last?.type == "user.created")
        let byID = try WebhookDeliveries.redeliver(
            eventIDs: [receiver.received[0].id, "evt_unknown"], to: [receiver.server.baseURL + "/hooks"], on: harness.connection)
        #expect(byID == 1, "a delivered event by id; an unknown id queues nothing")
        #expect(try jobs.runOnce().webhooks.delivered == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_deliveries WHERE state <> 'delivered'") == 0)
    }

    @Test("An endpoint that cannot be reached gets one attempt per pass and holds up no other endpoint")
    func unreachable() throws {
        let receiver = try Receiver()
        defer { receiver.server.stop() }
        let closed = "http://127.0.0.1:9/hooks"
        let harness = try WebhookTests.harness(endpoints: [closed, receiver.server.baseURL + "/hooks"])
        _ = try WebhookTests.signIn(harness, "fqauth-YuyXoY-2022-signup")
        _ = try WebhookTests.signIn(harness, "gameroasters-YuyXoY-2021")
        let pass = try #require(try harness.jobs()).runOnce().webhooks
        #expect(pass.failed == 1 && pass.delivered == 2)
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint = ? AND attempts = 0", closed) == 1)
        let log = try WebhookDeliveries.attempts(limit: 10, on: harness.connection)
        #expect(log.first { $0.endpoint == closed }?.status == nil)
    }

    @Test("A backlog drains in one pass, several deliveries in flight per endpoint, each signed, in order per user")
    func backlogDrains() throws {
        let receivers = [try Receiver(), try Receiver()]
        defer { for receiver in receivers { receiver.server.stop() } }
        let endpoints = receivers.map { $0.server.baseURL + "/hooks" }
        let harness = try WebhookTests.harness(endpoints: endpoints)
        // 1,000 users with one event each, and a second event for the first 100 of them, whose
        // order the concurrent senders must keep: 2,200 deliveries to two endpoints.
        let users = 1000
        let outbox = WebhookOutbox(endpoints: endpoints)
        try harness.connection.transaction {
            for user in 1...UInt64(users) {
                try outbox.record(
                    .sessionsRevoked(ids: [user], reason: "logout"), userID: user, at: harness.clock.now(), on: harness.connection)
                if user <= 100 {
                    try outbox.record(
                        .userDeleted(source: "user", anonymised: false), userID: user, at: harness.clock.now(), on: harness.connection)
                }
            }
        }
        let expected = users + 100
        let backlog = try Outboxes.backlogs(on: harness.connection).first { $0.outbox == "webhooks" }
        #expect(
            backlog?.depth == expected * 2 && backlog?.due == expected * 2, "the backlog shows in siwa_outbox_depth and siwa_outbox_due")
        let jobs = try #require(try harness.jobs())
        let started = DispatchTime.now().uptimeNanoseconds
        let pass = try jobs.runOnce().webhooks
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        // The figure and its reference, from the same run; not asserted (the machine is shared).
        print(
            "webhooks: \(expected * 2) deliveries (\(users) users x 2 endpoints, 100 users with a second event) to two "
                + "answering receivers drained in \(String(format: "%.2f", seconds)) s (target: under 30 s)")
        #expect(pass.delivered == expected * 2 && pass.failed == 0, "one pass sends the whole backlog")
        #expect(try harness.count("SELECT COUNT(*) FROM webhook_deliveries WHERE state <> 'delivered'") == 0)
        #expect(try Outboxes.backlogs(on: harness.connection).first { $0.outbox == "webhooks" }?.depth == 0)
        let recorded = try harness.connection.query("SELECT public_id, user_id FROM webhook_events ORDER BY id").map {
            (id: try $0.decode(at: 0) as String, user: String(try $0.decode(at: 1) as UInt64))
        }
        for receiver in receivers {
            let received = receiver.received
            #expect(received.count == expected, "every delivery arrived once")
            #expect(Set(received.map(\.id)).symmetricDifference(recorded.map(\.id)).isEmpty, "exactly the recorded events")
            let arrived = Dictionary(grouping: received, by: \.user).mapValues { $0.map(\.id) }
            let order = Dictionary(grouping: recorded, by: \.user).mapValues { $0.map(\.id) }
            let outOfOrder = order.keys.filter { arrived[$0] != order[$0] }.sorted()
            #expect(outOfOrder.isEmpty, "each user's events arrive in the order they were recorded; not: \(outOfOrder.prefix(5))")
            for request in receiver.server.receivedRequests {
                let header = try #require(request.headers["siwa-signature"])
                let time = harness.clock.now()
                #expect(
                    header
                        == WebhookSender.signature(body: request.body, time: Int64(time), secrets: [Array(WebhookTests.secret.utf8)]))
            }
        }
    }
}
