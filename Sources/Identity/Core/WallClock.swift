import Foundation

/// Where the use cases take the time from: the system clock in production, a settable one in tests
/// (so that real Apple tokens verify at their own moment).
package protocol WallClock: Sendable {
    /// The current time in Unix seconds.
    func now() -> Double
}

/// The system's wall clock.
package struct SystemClock: WallClock {
    package init() {}

    package func now() -> Double { Date().timeIntervalSince1970 }
}
