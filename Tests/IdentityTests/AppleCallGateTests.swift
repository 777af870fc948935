import Dispatch
import Foundation
import Identity
import SIWATestSupport
import Synchronization
import Testing

/// A hanging or unreachable Apple cannot hold the worker threads: a bound on calls in flight and
/// a pause after Apple could not be reached.
@Suite struct AppleCallGateTests {
    struct Unreachable: Error {}

    @Test(
        "Beyond the limit of calls in flight, once a call has taken longer than the wait, a call is refused at once with apple_unavailable")
    func limit() throws {
        let clock = ManualClock(1_000)
        let gate = AppleCallGate(limit: 2, clock: clock)
        let group = DispatchGroup()
        let releases = [holdSlot(gate, group, failing: false), holdSlot(gate, group, failing: false)]
        #expect(gate.inFlight == 2)
        clock.advance(0.6)
        var called = false
        #expect(throws: IdentityError(.appleUnavailable)) {
            try gate.pass({ called = true }, unreachable: { _ in false })
        }
        #expect(!called, "a refused call never reaches Apple")
        for release in releases { release.signal() }
        group.wait()
        #expect(try gate.pass({ 7 }, unreachable: { _ in false }) == 7, "free again once the calls ended")
    }

    @Test(
        "Beyond the limit with a slow Apple, a few calls wait for a slot and go through when one frees; one more than may wait is refused at once"
    )
    func burstWaits() throws {
        let clock = ManualClock(1_000)
        let gate = AppleCallGate(limit: 1, waiting: 1, wait: 30, clock: clock)
        let group = DispatchGroup()
        let release = holdSlot(gate, group, failing: false)
        clock.advance(31)
        let waited = Mutex<Int?>(nil)
        onThread(group) {
            let value = try? gate.pass({ 2 }, unreachable: { _ in false })
            waited.withLock { $0 = value }
        }
        while gate.waiting == 0 { sched_yield() }
        #expect(throws: IdentityError(.appleUnavailable), "a second waiter is over the limit of waiting calls") {
            try gate.pass({ 3 }, unreachable: { _ in false })
        }
        release.signal()
        group.wait()
        #expect(waited.withLock { $0 } == 2, "the waiting call went through once the slot was free")
        #expect(gate.inFlight == 0 && gate.waiting == 0)
    }

    @Test("While Apple answers (no call in flight older than the wait), a burst beyond the waiting calls waits too, and all go through")
    func burstWaitsWhileAppleAnswers() throws {
        let gate = AppleCallGate(limit: 2, waiting: 1, wait: 30, clock: ManualClock(1_000))
        let group = DispatchGroup()
        let releases = [holdSlot(gate, group, failing: false), holdSlot(gate, group, failing: false)]
        let passed = Mutex(0)
        let refused = Mutex(0)
        for _ in 0..<6 {
            onThread(group) {
                if (try? gate.pass({ 1 }, unreachable: { _ in false })) != nil {
                    passed.withLock { $0 += 1 }
                } else {
                    refused.withLock { $0 += 1 }
                }
            }
        }
        while gate.waiting + refused.withLock({ $0 }) < 6 { sched_yield() }
        for release in releases { release.signal() }
        group.wait()
        #expect(passed.withLock { $0 } == 6, "six calls waited, five more than `waiting`, and all went through")
        #expect(gate.inFlight == 0 && gate.waiting == 0)
    }

    /// Runs `body` on a thread of its own, in `group`. Not on Dispatch's pool: the test's own
    /// thread and a call held in the gate can take all of its threads, and `body` would then never
    /// run while the test waits for it.
    func onThread(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread.detachNewThread {
            body()
            group.leave()
        }
    }

    /// Takes a slot of `gate` with a call that lasts until the returned semaphore is signalled;
    /// the call then returns, or throws `Unreachable` when `failing`.
    func holdSlot(_ gate: AppleCallGate, _ group: DispatchGroup, failing: Bool = true) -> DispatchSemaphore {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        onThread(group) {
            _ = try? gate.pass(
                { () -> Int in
                    entered.signal()
                    release.wait()
                    if failing { throw Unreachable() }
                    return 1
                }, unreachable: { $0 is Unreachable })
        }
        entered.wait()
        return release
    }

    @Test("A waiting call gives up after its wait; it is refused at once when the call ahead finds Apple unreachable")
    func waitEnds() throws {
        let group = DispatchGroup()
        let short = AppleCallGate(limit: 1, waiting: 2, wait: 0.2, cooldown: 60, clock: ManualClock(1_000))
        let releaseShort = holdSlot(short, group)
        #expect(throws: IdentityError(.appleUnavailable), "the slot stayed taken for longer than the wait") {
            try short.pass({ 1 }, unreachable: { _ in false })
        }
        releaseShort.signal()
        // A wait of a minute: only the failing call ahead can end it within the test.
        let long = AppleCallGate(limit: 1, waiting: 2, wait: 60, cooldown: 60, clock: ManualClock(1_000))
        let releaseLong = holdSlot(long, group)
        let refusal = Mutex<String?>(nil)
        onThread(group) {
            do { _ = try long.pass({ 2 }, unreachable: { _ in false }) } catch {
                refusal.withLock { $0 = (error as? IdentityError)?.reason }
            }
        }
        while long.waiting == 0 { sched_yield() }
        releaseLong.signal()
        group.wait()
        #expect(refusal.withLock { $0 }?.contains("could not be reached") == true, "\(String(describing: refusal.withLock { $0 }))")
    }

    @Test("After a call could not reach Apple, calls are refused for the cooldown, then let through")
    func cooldown() throws {
        let clock = ManualClock(1_000)
        let gate = AppleCallGate(limit: 4, cooldown: 5, clock: clock)
        #expect(throws: Unreachable.self) { try gate.pass({ throw Unreachable() }, unreachable: { $0 is Unreachable }) }
        clock.advance(4.9)
        #expect(throws: IdentityError(.appleUnavailable)) { try gate.pass({ 1 }, unreachable: { _ in false }) }
        clock.advance(0.2)
        #expect(try gate.pass({ 1 }, unreachable: { _ in false }) == 1)
        // Apple's refusals (it answered) do not close the gate.
        struct Refused: Error {}
        #expect(throws: Refused.self) { try gate.pass({ throw Refused() }, unreachable: { $0 is Unreachable }) }
        #expect(try gate.pass({ 2 }, unreachable: { _ in false }) == 2)
        #expect(gate.inFlight == 0)
    }
}
