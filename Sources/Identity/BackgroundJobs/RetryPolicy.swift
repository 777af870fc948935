/// When a background job tries a row of its outbox or schedule again: a wait that starts at
/// `base` seconds and doubles after each further attempt, at most `exponentBound` times and never
/// beyond `cap`, plus up to `jitter` seconds at random so that rows due together spread out. The
/// wait is computed here and bound into the statements of `Accounts` as seconds: the storage layer
/// holds no schedule of its own.
package struct RetryPolicy: Sendable, Equatable {
    /// Seconds to wait after the first attempt.
    package var base: Int
    /// The longest wait, in seconds, before the jitter.
    package var cap: Int
    /// The most times `base` is doubled (0: every wait is `base`, a fixed interval).
    package var exponentBound: Int
    /// The wait grows by a random whole number of seconds in `0..<jitter` (none for 0).
    package var jitter: Int
    /// Seconds a claimed row is held before another sender may claim it (a sender that stops half
    /// way retries it then); nil where the claim itself pushes the row back by the wait.
    package var lease: Int?

    /// - Parameters:
    ///   - base: seconds to wait after the first attempt.
    ///   - cap: the longest wait before the jitter, in seconds.
    ///   - exponentBound: the most doublings of `base`.
    ///   - jitter: the wait grows by up to `jitter - 1` seconds at random.
    ///   - lease: seconds a claim holds a row; nil when the claim pushes it back by the wait.
    package init(base: Int, cap: Int, exponentBound: Int = 20, jitter: Int = 0, lease: Int? = nil) {
        precondition(base >= 0 && cap >= 0 && exponentBound >= 0 && jitter >= 0, "a retry policy's numbers are not negative")
        self.base = base
        self.cap = cap
        self.exponentBound = exponentBound
        self.jitter = jitter
        self.lease = lease
    }

    /// Seconds to wait after attempt number `attempt` (from 1) before the next, with `extra`
    /// seconds of jitter (kept within `0..<jitter`): `min(cap, base * 2^min(attempt - 1,
    /// exponentBound)) + extra`.
    package func delay(afterAttempt attempt: Int, jitter extra: Int) -> Int {
        let doublings = min(max(attempt - 1, 0), exponentBound)
        let wait: Int
        if base == 0 {
            wait = 0
        } else if doublings >= Int.bitWidth - 2 {
            wait = cap
        } else {
            let (grown, overflow) = base.multipliedReportingOverflow(by: 1 << doublings)
            wait = overflow ? cap : min(cap, grown)
        }
        return wait + min(max(extra, 0), max(jitter - 1, 0))
    }

    /// `delay(afterAttempt:jitter:)` with the jitter drawn from `random`.
    package func delay(afterAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Int {
        delay(afterAttempt: attempt, jitter: jitter > 0 ? Int.random(in: 0..<jitter, using: &random) : 0)
    }

    /// Seconds a claim for attempt number `attempt` holds its row: the lease, or without one the
    /// wait after that attempt (the claim sets the retry time at once).
    package func hold(forAttempt attempt: Int) -> Int {
        lease ?? delay(afterAttempt: attempt)
    }

    /// `delay(afterAttempt:jitter:)` with the jitter drawn from the system's generator.
    package func delay(afterAttempt attempt: Int) -> Int {
        var random = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &random)
    }
}

extension RetryPolicy {
    /// The revocations queued for Apple: 30 s after the first attempt, doubled per attempt up to an
    /// hour. A claim pushes the row back by the wait at once, so a sender that stops half way
    /// retries it then.
    package static let appleRevocations = RetryPolicy(base: 30, cap: 3600)

    /// The daily check of each stored Apple refresh token (Apple's guidance: at most once a day): a
    /// day after the last, plus up to an hour so that checks do not bunch up. A claim holds the
    /// token 15 minutes, which is also when a check that could not reach Apple is tried again.
    package static let appleValidations = RetryPolicy(base: 86_400, cap: 86_400, exponentBound: 0, jitter: 3600, lease: 900)

    /// The lifecycle webhook deliveries: 10 s after the first failed attempt, doubled per attempt
    /// up to an hour. A claim holds a delivery a minute longer than its request may take.
    /// - Parameter requestTimeout: the seconds one delivery's request may take.
    package static func webhookDeliveries(requestTimeout: Double) -> RetryPolicy {
        RetryPolicy(base: 10, cap: 3600, lease: Int(requestTimeout) + 60)
    }
}
