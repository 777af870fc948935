/// How fast and how wide `siwa jobs` checks Apple's refresh tokens, and what it does with a
/// backlog it cannot clear: the numbers of the daily validation besides its schedule
/// (`RetryPolicy.appleValidations`), computed here and bound into the statements of `Accounts`.
///
/// The arithmetic (docs/OPERATIONS.md, "The daily check of Apple's tokens"): every token is
/// checked once a day, so N tokens need N / 86,400 calls a second around the clock (10 million:
/// 116 a second). Each call takes one of Apple's latencies (100-300 ms), so that takes
/// rate × latency calls in flight, one per lane (116 × 0.3 s: 35).
package struct AppleValidationPace: Sendable, Equatable {
    /// Calls to Apple a second at most, for the whole `siwa jobs` (`SIWA_APPLE_VALIDATION_RATE`):
    /// 10 million tokens a day need 116, so 150 leaves room to catch up after an outage.
    package static let defaultRate = 150
    /// Lanes (threads, each with its own database connection and Apple client) by default
    /// (`SIWA_APPLE_VALIDATION_LANES`): 80 calls a second at Apple's 200 ms, and with `siwa serve`'s
    /// 131 connections within MariaDB's default `max_connections` of 151.
    package static let defaultLanes = 16

    /// Calls a second at most.
    package var rate: Int
    /// Lanes at most; the first runs alone until a claim comes back full (a backlog).
    package var lanes: Int
    /// Seconds an idle first lane waits before it looks for due checks again (`siwa serve` writes
    /// the tokens, another process: nothing wakes it).
    package var idlePoll: Double
    /// A check overdue by more than this many seconds is shed: moved to its next slot.
    package var shedAfter: Int
    /// Checks shed per statement, oldest first.
    package var shedBatch: Int
    /// Shedding statements per pass at most (a pass sheds up to `shedBatch × shedStatements`).
    package var shedStatements: Int
    /// Seconds a token of another team is put ahead when a claim meets it (it is never checked).
    package var foreignPark: Int
    /// The most due checks `GET /metrics` counts at a scrape.
    package var dueCap: Int

    /// - Parameters:
    ///   - rate: calls a second at most (at least 1).
    ///   - lanes: lanes at most (at least 1).
    package init(
        rate: Int = AppleValidationPace.defaultRate, lanes: Int = AppleValidationPace.defaultLanes, idlePoll: Double = 1,
        shedAfter: Int = 86_400, shedBatch: Int = 1_000, shedStatements: Int = 50, foreignPark: Int = 30 * 86_400,
        dueCap: Int = 10_000
    ) {
        self.rate = max(1, rate)
        self.lanes = max(1, lanes)
        self.idlePoll = idlePoll
        self.shedAfter = shedAfter
        self.shedBatch = shedBatch
        self.shedStatements = shedStatements
        self.foreignPark = foreignPark
        self.dueCap = dueCap
    }

    /// The slots' period: the daily schedule's interval (a shed check moves by whole periods, so
    /// it keeps its time of day).
    package var slot: Int { RetryPolicy.appleValidations.base }

    /// Tokens a lane claims at once: up to 8 (one statement claims them), fewer when the rate is
    /// so low that a lane's batch would take more than a minute of the rate's calls, well within
    /// the claim's lease.
    package var claimBatch: Int { max(1, min(8, rate * 60 / lanes)) }
}
