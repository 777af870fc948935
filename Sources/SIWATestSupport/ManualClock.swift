import Identity
import Synchronization

/// A clock that stands where a test sets it: real tokens verify at their own moment.
package final class ManualClock: WallClock {
    private let time: Mutex<Double>

    package init(_ time: Double) { self.time = Mutex(time) }

    package func now() -> Double { time.withLock { $0 } }

    /// Moves the clock to `time`.
    package func set(_ time: Double) { self.time.withLock { $0 = time } }

    /// Moves the clock on by `seconds`.
    package func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
}
