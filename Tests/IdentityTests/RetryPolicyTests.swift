import Identity
import Testing

/// The waits of the background jobs: growth, cap, bound of the doublings, jitter, lease.
@Suite struct RetryPolicyTests {
    /// A generator that answers the same number every time: 2^50 draws the lowest jitter (a 0 would
    /// make `random(in:)` draw again forever), `.max` the highest.
    struct FixedGenerator: RandomNumberGenerator {
        let value: UInt64
        mutating func next() -> UInt64 { value }
    }

    @Test("The wait starts at the base and doubles per attempt until the cap")
    func growth() {
        let policy = RetryPolicy(base: 30, cap: 3600)
        #expect((1...9).map { policy.delay(afterAttempt: $0, jitter: 0) } == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600])
        #expect(policy.delay(afterAttempt: 0, jitter: 0) == 30, "an attempt number below 1 counts as the first")
    }

    @Test("The revocations wait 30 s doubled per attempt, at most an hour; the webhooks 10 s, at most an hour")
    func outboxes() {
        #expect(RetryPolicy.appleRevocations.delay(afterAttempt: 1) == 30)
        #expect(RetryPolicy.appleRevocations.delay(afterAttempt: 3) == 120)
        #expect(RetryPolicy.appleRevocations.delay(afterAttempt: 1_000) == 3600)
        #expect(RetryPolicy.appleRevocations.hold(forAttempt: 2) == 60, "a revocation's claim holds it until its retry")
        let webhooks = RetryPolicy.webhookDeliveries(requestTimeout: 10)
        #expect(webhooks.delay(afterAttempt: 1) == 10 && webhooks.delay(afterAttempt: 4) == 80 && webhooks.delay(afterAttempt: 30) == 3600)
        #expect(webhooks.hold(forAttempt: 5) == 70, "a delivery's claim holds it a minute past its request's timeout")
    }

    @Test("The doublings stop at the exponent bound, and a huge attempt number neither overflows nor passes the cap")
    func exponentBound() {
        let bounded = RetryPolicy(base: 10, cap: 1_000_000, exponentBound: 3)
        #expect(bounded.delay(afterAttempt: 4, jitter: 0) == 80)
        #expect(bounded.delay(afterAttempt: 50, jitter: 0) == 80)
        let unbounded = RetryPolicy(base: 10, cap: 5000, exponentBound: 200)
        #expect(unbounded.delay(afterAttempt: 70, jitter: 0) == 5000)
        #expect(unbounded.delay(afterAttempt: Int.max, jitter: 0) == 5000)
        #expect(RetryPolicy(base: 0, cap: 5000, exponentBound: 200).delay(afterAttempt: 100, jitter: 0) == 0)
    }

    @Test("The daily check is a day plus 0 to 3599 s of jitter, held 15 minutes by a claim")
    func dailyValidationJitter() {
        let policy = RetryPolicy.appleValidations
        var lowest = FixedGenerator(value: 1 << 50)
        var highest = FixedGenerator(value: .max)
        #expect(policy.delay(afterAttempt: 1, using: &lowest) == 86_400)
        #expect(policy.delay(afterAttempt: 1, using: &highest) == 86_400 + 3599)
        #expect(policy.delay(afterAttempt: 7, using: &lowest) == 86_400, "a fixed interval does not grow")
        #expect(policy.hold(forAttempt: 1) == 900)
        for _ in 0..<200 {
            #expect((86_400..<90_000).contains(policy.delay(afterAttempt: 1)))
        }
    }

    @Test("A jitter passed in is kept within 0..<jitter; without jitter none is added")
    func jitterBounds() {
        let policy = RetryPolicy(base: 100, cap: 100, jitter: 10)
        #expect(policy.delay(afterAttempt: 1, jitter: 9) == 109)
        #expect(policy.delay(afterAttempt: 1, jitter: 50) == 109)
        #expect(policy.delay(afterAttempt: 1, jitter: -5) == 100)
        var highest = FixedGenerator(value: .max)
        #expect(RetryPolicy(base: 100, cap: 100).delay(afterAttempt: 1, using: &highest) == 100)
        #expect(RetryPolicy(base: 100, cap: 100).delay(afterAttempt: 1, jitter: 7) == 100)
    }
}
