import AccountData
import Accounts
import AppleID
import Foundation
import Identity
import JOSE
import Logging
import MariaDB
import SIWATestSupport
import Synchronization
import Testing
import WebForms

/// The daily check of Apple's tokens on lanes (`AppleValidator`): concurrent calls, the rate
/// ceiling, the shedding of a backlog and the metric of how far behind it is, against a stand-in
/// for Apple's token endpoint that serves each call on a thread of its own.
@Suite final class AppleValidatorTests: MigratedSchemaSuite {
    static let teamID = "TEAMID1234"
    static let clientID = "com.example.validations"

    /// Calls the stand-in for Apple received, and the most in flight at once.
    final class Calls: Sendable {
        private let state = Mutex<(received: Int, inFlight: Int, most: Int)>((0, 0, 0))
        /// Calls held until this many are in flight together (or 10 s pass): 0 holds none.
        let gather: Int
        private let gathered = NSCondition()

        init(gather: Int = 0) { self.gather = gather }

        var received: Int { state.withLock { $0.received } }
        var mostInFlight: Int { state.withLock { $0.most } }

        /// Apple's answer to a refresh-token grant, once `gather` calls are in flight together.
        func answer(_ request: TestHTTPServer.Request) -> TestHTTPServer.Response {
            let inFlight = state.withLock { state in
                state.received += 1
                state.inFlight += 1
                state.most = max(state.most, state.inFlight)
                return state.inFlight
            }
            if gather > 0 {
                gathered.lock()
                if inFlight >= gather {
                    gathered.broadcast()
                } else {
                    let until = Date(timeIntervalSinceNow: 10)
                    while state.withLock({ $0.most }) < gather, gathered.wait(until: until) {}
                }
                gathered.unlock()
            }
            state.withLock { $0.inFlight -= 1 }
            return TestHTTPServer.Response(
                status: 200, headers: [("Content-Type", "application/json")],
                body: #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"id_token":"i"}"#)
        }
    }

    let dataKeys = try! DataKeys(text: "k1 \(Data((0..<32).map { UInt8($0) }).base64EncodedString())\n")

    /// `count` tokens of this team, all due, the oldest `count` seconds ago.
    func dueTokens(_ count: Int, overdueBy extra: Int = 0) throws {
        let sealed = try dataKeys.seal("r.validation", clientID: Self.clientID)
        for n in 1...count {
            let id = UInt64(1_000 + n)
            _ = try connection.execute("INSERT INTO users (id) VALUES (?)", id)
            _ = try connection.execute(
                "INSERT INTO apple_identities (id, user_id, team_id, sub, audience) VALUES (?, ?, ?, ?, ?)", id, id, Self.teamID,
                "sub.\(n)", Self.clientID)
            _ = try connection.execute(
                """
                INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at)
                VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3) - INTERVAL ? SECOND)
                """, id, Self.clientID, sealed.ciphertext, sealed.keyID, extra + count - n + 1)
        }
    }

    func validator(apple: TestHTTPServer, lanes: Int, rate: Int, pacer: CallPacer? = nil) throws -> AppleValidator {
        let settings = AppleSettings(
            teamID: Self.teamID, keyID: "KEYID12345", privateKey: try P256PrivateKey(), bundleIDs: [Self.clientID], servicesID: nil,
            baseURL: apple.baseURL, validationPace: AppleValidationPace(rate: rate, lanes: lanes))
        return AppleValidator(
            apple: AppleServices(settings: settings), dataKeys: dataKeys, database: database.configuration, webhooks: nil,
            logger: Logger(label: "validator-tests"), pacer: pacer)
    }

    /// A flag another thread reads.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    /// Runs a round on a thread of its own, on a connection of its own, until `stop` is set.
    /// - Returns: the round, and a wait for the thread's end (the connection then closed).
    func startRound(_ validator: AppleValidator, stop: Flag) -> (AppleValidator.Round, finished: DispatchSemaphore) {
        let round = AppleValidator.Round("apple", outcome: AppleValidator.Outcome())
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let lane = validator.makeLane()
            defer {
                lane.close()
                finished.signal()
            }
            validator.run(round, with: lane, until: .infinity, stopped: { stop.isSet })
        }
        return (round, finished)
    }

    @Test("The lanes call Apple concurrently: four lanes have four checks in flight at once, and check every due token once")
    func concurrent() throws {
        try dueTokens(32)
        let calls = Calls(gather: 4)
        let apple = try TestHTTPServer(concurrent: true) { calls.answer($0) }
        defer { apple.stop() }
        let validator = try validator(apple: apple, lanes: 4, rate: 10_000)
        let round = AppleValidator.Round("apple", outcome: AppleValidator.Outcome())
        validator.run(round, with: validator.makeLane(on: connection), until: .infinity, stopped: { false })
        let (outcome, end, error) = round.result
        #expect(error == nil && end == .idle)
        #expect(outcome.validated == 32 && calls.received == 32, "\(outcome) \(calls.received)")
        #expect(calls.mostInFlight == 4, "four lanes, four calls in flight together")
        #expect(
            try connection.query("SELECT COUNT(*) FROM apple_tokens WHERE next_validation_at > UTC_TIMESTAMP(3) + INTERVAL 23 HOUR")[0]
                .decode(at: 0) == 32, "each checked once, the next check a day ahead")
    }

    @Test("The lanes keep under the rate ceiling: with the pacer's clock stopped one call goes, a second later ten more, no more")
    func rateCeiling() throws {
        try dueTokens(40)
        let calls = Calls()
        let apple = try TestHTTPServer(concurrent: true) { calls.answer($0) }
        defer { apple.stop() }
        let clock = ManualClock(1_000)
        let pacer = CallPacer(rate: 10, clock: clock)
        let validator = try validator(apple: apple, lanes: 4, rate: 10, pacer: pacer)
        let stop = Flag()
        let (round, finished) = startRound(validator, stop: stop)
        defer {
            stop.set()
            finished.wait()
        }
        // Every lane waits for its turn: the calls made are all the ceiling let through.
        try #require(eventually(within: 30) { pacer.waiting == 4 && calls.received == 1 }, "\(pacer.waiting) \(calls.received)")
        #expect(calls.received == 1, "with the clock stopped, only the first turn")
        // The clock moved on by one turn at a time (as the pacer counts them): one more call each.
        for turn in 1...10 {
            clock.set(1_000 + Double(turn) / 10)
            try #require(
                eventually(within: 30) { pacer.waiting == 4 && calls.received == 1 + turn }, "\(turn): \(pacer.waiting) \(calls.received)")
        }
        #expect(calls.received == 11, "a second at 10 a second: ten more calls, no more")
        #expect(round.result.0.validated >= 10)
    }

    @Test(
        "Checks overdue by more than a day are shed oldest first, each to its next daily slot, counted and audited; the metric reports the overdue age"
    )
    func shed() throws {
        let pace = AppleValidationPace(shedBatch: 2)
        // Five tokens, the oldest due 3 days + 5 s ago, the newest 3 days + 1 s ago; one more due a minute ago.
        try dueTokens(5, overdueBy: 3 * 86_400)
        _ = try connection.execute("INSERT INTO users (id) VALUES (9999)")
        _ = try connection.execute(
            "INSERT INTO apple_identities (id, user_id, team_id, sub, audience) VALUES (9999, 9999, ?, 'recent', ?)", Self.teamID,
            Self.clientID)
        _ = try connection.execute(
            """
            INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at)
            VALUES (9999, ?, x'00', 'k1', UTC_TIMESTAMP(3) - INTERVAL 60 SECOND)
            """, Self.clientID)
        let before = try Outboxes.validationBacklog(cap: pace.dueCap, on: connection)
        #expect(before.due == 6)
        #expect((3 * 86_400 + 5)...(3 * 86_400 + 60) ~= before.overdueSeconds, "the oldest check's age: \(before.overdueSeconds)")
        #expect(try Outboxes.validationBacklog(cap: 4, on: connection).due == 4, "counted up to the cap")

        // The first statement moves the two oldest only.
        #expect(try AppleValidations.shedOverdue(by: pace.shedAfter, slot: pace.slot, limit: 2, on: connection) == 2)
        let moved: [UInt64] = try connection.query(
            "SELECT identity_id FROM apple_tokens WHERE next_validation_at > UTC_TIMESTAMP(3) ORDER BY identity_id"
        ).map { try $0.decode(at: 0) }
        #expect(moved == [1_001, 1_002], "the oldest first")
        // Each moved by whole days to its slot's next time of day: due again within a day, at the same time of day.
        let slots: [Int] = try connection.query(
            """
            SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), next_validation_at) AS ahead FROM apple_tokens
            WHERE next_validation_at > UTC_TIMESTAMP(3) ORDER BY identity_id
            """
        ).map { try $0.decode(column: "ahead") }
        #expect(slots.allSatisfy { (86_400 - 10)...86_400 ~= $0 }, "\(slots)")

        // The rest go with a pass.
        #expect(try AppleValidations.shedOverdue(by: pace.shedAfter, slot: pace.slot, limit: 10, on: connection) == 3)
        let after = try Outboxes.validationBacklog(cap: pace.dueCap, on: connection)
        #expect(after.due == 1 && (60...120) ~= after.overdueSeconds, "the recent check stays, and is now the oldest: \(after)")
    }

    @Test("A pass of siwa jobs sheds the checks overdue by more than a day, audits the count, and checks the others")
    func passSheds() throws {
        let harness = try HandlerHarness()
        let sealed = try dataKeys.seal("r.\(HandlerHarness.bundleID).1", clientID: HandlerHarness.bundleID)
        for (id, overdue) in [(UInt64(1_001), 2 * 86_400 + 5), (1_002, 86_400 + 60), (1_003, 30)] {
            _ = try harness.connection.execute("INSERT INTO users (id) VALUES (?)", id)
            _ = try harness.connection.execute(
                "INSERT INTO apple_identities (id, user_id, team_id, sub, audience) VALUES (?, ?, 'TEAMID1234', ?, ?)", id, id, "sub.\(id)",
                HandlerHarness.bundleID)
            _ = try harness.connection.execute(
                """
                INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at)
                VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3) - INTERVAL ? SECOND)
                """, id, HandlerHarness.bundleID, sealed.ciphertext, sealed.keyID, overdue)
        }
        let summary = try #require(try harness.jobs()).runOnce()
        #expect(summary.validationsShed == 2 && summary.validated == 1, "\(summary)")
        #expect(harness.appleCalls("/auth/token").count == 1, "a shed check makes no call")
        let detail: String = try harness.connection.query(
            "SELECT detail FROM audit_events WHERE event_type = 'apple_validations_shed'")[0].decode(at: 0)
        #expect(detail.contains(#""count": 2"#) || detail.contains(#""count":2"#), "\(detail)")
    }
}
