import Accounts
import Foundation
import HTTPClient
import JOSE
package import Logging
package import MariaDB
import Synchronization
import Threads

/// Delivers the webhook outbox for `siwa jobs`: each due delivery is POSTed with its signature,
/// marked delivered on a 2xx answer, retried later otherwise; every attempt is logged.
///
/// Each endpoint is a lane of its own, so a slow or unreachable endpoint holds up no other. A lane
/// sends one delivery at a time until a second one is due right after the first (a backlog); then
/// `concurrency - 1` helper threads join it, each with its own database connection and HTTP client,
/// until nothing is due. Order per user needs no coordination between them: a claimed delivery stays
/// pending until its outcome is recorded, and `WebhookDeliveries.claimNext` never claims a delivery
/// while an earlier one of the same user to the same endpoint is pending.
package struct WebhookSender: Sendable {
    /// The name of the signature header.
    package static let signatureHeader = "Siwa-Signature"
    /// Deliveries in flight to one endpoint at once, at most: enough to hide the database's and the
    /// endpoint's round trips, few enough not to flood the app's backend after an outage.
    package static let defaultConcurrency = 4

    let settings: WebhookSettings
    /// Where each sending thread opens its own connection.
    let database: Configuration
    let logger: Logger
    let clock: any WallClock
    let concurrency: Int
    /// When a failed delivery is tried again, and how long a claim holds one.
    let retries: RetryPolicy

    /// - Parameters:
    ///   - database: where each sending thread opens its own connection (closed when it finishes).
    ///   - concurrency: deliveries in flight to one endpoint at once, at most.
    package init(
        settings: WebhookSettings, database: Configuration, logger: Logger, clock: any WallClock = SystemClock(),
        concurrency: Int = WebhookSender.defaultConcurrency
    ) {
        self.settings = settings
        self.database = database
        self.logger = logger
        self.clock = clock
        self.concurrency = max(1, concurrency)
        self.retries = .webhookDeliveries(requestTimeout: settings.http.timeout)
    }

    /// The signature header's value for `body` sent at `time` (Unix seconds):
    /// `t=<time>,v1=<hex HMAC-SHA256 of "<time>.<body>">`, with one `v1` per secret.
    package static func signature(body: [UInt8], time: Int64, secrets: [[UInt8]]) -> String {
        let signed = Array("\(time).".utf8) + body
        return (["t=\(time)"] + secrets.map { "v1=" + hexString(HMACSHA256.authenticationCode(key: $0, message: signed)) })
            .joined(separator: ",")
    }

    /// What one round of deliveries did.
    package struct Outcome: Sendable, Equatable {
        package var delivered = 0
        package var failed = 0
        /// Deliveries given up after the retry window.
        package var givenUp = 0

        package init() {}

        /// Adds what another lane or thread did.
        mutating func add(_ other: Outcome) {
            delivered += other.delivered
            failed += other.failed
            givenUp += other.givenUp
        }
    }

    /// One endpoint's round: its threads' outcome and how it ended (`RoundEnd`).
    package typealias LaneRound = Identity.LaneRound<Outcome>
    /// Why a lane's round ended: nothing more due, the endpoint unreachable, or stopped.
    package typealias RoundEnd = LaneRound.End

    /// Sends what is due to every endpoint, each in its own lane, until nothing is due or
    /// `deadline` passes; an endpoint that cannot be reached gets no further attempt in this round.
    /// Returns once every thread it started has finished and closed its connection.
    /// - Throws: the first database error of any lane, after all have finished.
    package func deliver(until deadline: Double) throws -> Outcome {
        let lanes = settings.endpoints.map { LaneRound($0, outcome: Outcome()) }
        let runLane: @Sendable (LaneRound) -> Void = { [self] lane in
            let sender = Sender(configuration: database, http: settings.http)
            defer { sender.close() }
            run(lane, with: sender, until: deadline, stopped: { false })
        }
        // A lane per thread, the first on this one (so one endpoint costs no thread); a lane
        // whose thread cannot start (logged and counted) runs here too, after the first.
        var threads: [OwnedThread] = []
        var here = Array(lanes.prefix(1))
        for lane in lanes.dropFirst() {
            if let thread = OwnedThread.startIfPossible(name: "siwa-webhooks", { _ in runLane(lane) }) {
                threads.append(thread)
            } else {
                here.append(lane)
            }
        }
        for lane in here { runLane(lane) }
        for thread in threads { thread.join() }
        var outcome = Outcome()
        for lane in lanes {
            let (laneOutcome, _, error) = lane.result
            if let error { throw error }
            outcome.add(laneOutcome)
        }
        return outcome
    }

    /// One round of one lane: `sender` (this thread's) claims and sends until nothing is due, the
    /// endpoint cannot be reached, `deadline` passes or `stopped()`; once a backlog shows, helper
    /// threads join it. Returns when they have all finished.
    func run(_ lane: LaneRound, with sender: Sender, until deadline: Double, stopped: @escaping @Sendable () -> Bool) {
        var claimed = 0
        lane.run(
            helpers: concurrency - 1, threadName: "siwa-webhooks",
            first: { backlog in
                work(lane, with: sender, spread: 0, until: deadline, stopped: stopped) {
                    claimed += 1
                    // A second delivery due right after the first: a backlog, worth the helpers'
                    // connections.
                    if claimed == 2 { backlog() }
                }
            },
            helper: { [self] spread in
                let helper = Sender(configuration: database, http: settings.http)
                defer { helper.close() }
                work(lane, with: helper, spread: spread, until: deadline, stopped: stopped) {}
            })
    }

    /// Claims and sends deliveries to the lane's endpoint until this thread finds nothing to claim,
    /// or the round ends for all its threads; `claimed` is called after each claim. Finding nothing
    /// ends only this thread: another may have won the rows it read, or hold a user's earlier
    /// delivery whose next one it will claim itself once the first is answered.
    private func work(
        _ lane: LaneRound, with sender: Sender, spread: Int, until deadline: Double, stopped: () -> Bool, claimed: () -> Void
    ) {
        let lease = retries.hold(forAttempt: 1)
        while !lane.isOver {
            guard clock.now() < deadline, !stopped() else { return lane.end(.interrupted) }
            do {
                guard
                    let due = try WebhookDeliveries.claimNext(
                        endpoints: [lane.lane], lease: lease, spread: spread, on: sender.connection)
                else { return }
                claimed()
                let (outcome, reached) = try send(due, with: sender)
                lane.record { $0.add(outcome) }
                if !reached { return lane.end(.unreachable) }
            } catch {
                return lane.fail(error)
            }
        }
    }

    /// Sends one claimed delivery and records its outcome.
    /// - Returns: what it did, and whether the endpoint answered at all.
    private func send(_ due: DueDelivery, with sender: Sender) throws -> (Outcome, reached: Bool) {
        var outcome = Outcome()
        let body = Array(due.body.utf8)
        let request = HTTPRequest(
            method: "POST", url: due.endpoint,
            headers: [
                ("Content-Type", "application/json"), ("User-Agent", "siwa-webhooks"), ("Siwa-Event-Id", due.eventID),
                ("Siwa-Event-Type", due.type),
                (Self.signatureHeader, Self.signature(body: body, time: Int64(clock.now()), secrets: settings.secrets)),
            ], body: body)
        let started = DispatchTime.now().uptimeNanoseconds
        var status: Int?
        var failure: String?
        var reached = true
        do {
            let response = try sender.client.send(request)
            status = response.status
            if !(200..<300).contains(response.status) { failure = "HTTP \(response.status)" }
        } catch {
            failure = "\(error)"
            reached = false
        }
        let milliseconds = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        guard let failure else {
            try WebhookDeliveries.markDelivered(due, status: status ?? 200, milliseconds: milliseconds, on: sender.connection)
            outcome.delivered += 1
            return (outcome, reached)
        }
        let givenUp = try WebhookDeliveries.markFailed(
            due, status: status, error: failure, milliseconds: milliseconds, retryIn: retries.delay(afterAttempt: due.attempt),
            retryHours: settings.retryHours, on: sender.connection)
        outcome.failed += 1
        if givenUp {
            outcome.givenUp += 1
            logger.error(
                "webhook delivery given up after the retry window; `siwa webhooks redeliver` sends it again",
                metadata: ["event": "\(due.eventID)", "endpoint": "\(due.endpoint)", "error": "\(failure)"])
        } else {
            logger.warning(
                "webhook delivery failed; will retry",
                metadata: [
                    "event": "\(due.eventID)", "endpoint": "\(due.endpoint)", "attempt": "\(due.attempt)", "error": "\(failure)",
                ])
        }
        return (outcome, reached)
    }

    /// A sending thread's own database connection and HTTP client: made, used and closed on that
    /// thread.
    final class Sender {
        let connection: Connection
        let client: HTTPClient

        init(configuration: Configuration, http: HTTPClientConfiguration) {
            connection = Connection(configuration: configuration)
            client = HTTPClient(configuration: http)
        }

        /// Closes the connection (a `Connection` must be closed before it goes).
        func close() { connection.close() }
    }
}
