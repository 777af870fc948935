import Dispatch
import Foundation
import Identity
import SIWATestSupport
import Testing

/// A hanging or unreachable Apple cannot hold the worker threads: a bound on calls in flight and
/// a pause after Apple could not be reached.
@Suite struct AppleCallGateTests {
    struct Unreachable: Error {}

    @Test("Beyond the limit of calls in flight, a call is refused at once with apple_unavailable")
    func limit() throws {
        let gate = AppleCallGate(limit: 2, clock: ManualClock(1_000))
        let release = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                _ = try? gate.pass(
                    { () -> Int in
                        entered.signal()
                        release.wait()
                        return 1
                    }, unreachable: { _ in false })
            }
        }
        entered.wait()
        entered.wait()
        #expect(gate.inFlight == 2)
        var called = false
        #expect(throws: IdentityError(.appleUnavailable)) {
            try gate.pass({ called = true }, unreachable: { _ in false })
        }
        #expect(!called, "a refused call never reaches Apple")
        release.signal()
        release.signal()
        group.wait()
        #expect(try gate.pass({ 7 }, unreachable: { _ in false }) == 7, "free again once the calls ended")
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
