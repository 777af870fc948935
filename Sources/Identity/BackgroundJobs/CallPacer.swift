import Foundation
import Synchronization

/// A ceiling on the calls a second that several threads make together: each call waits for a
/// turn, and turns are `1 / rate` seconds apart, counted from the first of a run of calls (so a
/// thread that finds the pacer idle goes at once). With the clock stopped, exactly the calls whose
/// turn has come go; the others wait, which is what the tests count.
package final class CallPacer: Sendable {
    /// Turns a second.
    package let rate: Int
    private let clock: any WallClock
    /// The first turn of the current run, the turns handed out since, and the threads waiting.
    private let state = Mutex<(start: Double, issued: Int, waiting: Int)>((-Double.infinity, 0, 0))

    /// - Parameters:
    ///   - rate: turns a second (at least 1).
    ///   - clock: the time turns are counted in; by default the system's uptime, which no change
    ///     of the wall clock moves (a test's stopped clock holds the waiting calls back).
    package init(rate: Int, clock: any WallClock = Uptime()) {
        self.rate = max(1, rate)
        self.clock = clock
    }

    /// Threads waiting for their turn now.
    package var waiting: Int { state.withLock { $0.waiting } }

    /// Waits for the next turn, checking `stopped` at least every 50 ms.
    /// - Returns: false when `stopped` ended the wait (the turn is lost).
    package func turn(stopped: () -> Bool) -> Bool {
        let now = clock.now()
        let turn: Double = state.withLock { state in
            // Counted from the run's start (one rounding per turn, none accumulated); a turn in
            // the past starts a new run.
            var turn = state.start + Double(state.issued) / Double(rate)
            if turn < now {
                state.start = now
                state.issued = 0
                turn = now
            }
            state.issued += 1
            state.waiting += 1
            return turn
        }
        defer { state.withLock { $0.waiting -= 1 } }
        while true {
            let left = turn - clock.now()
            if left <= 0 { return true }
            if stopped() { return false }
            Thread.sleep(forTimeInterval: min(left, 0.05))
        }
    }

    /// Seconds since the system started (`CLOCK_MONOTONIC`): what the turns are counted in.
    package struct Uptime: WallClock {
        package init() {}

        package func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    }
}
