import Synchronization

/// Keeps a slow or hanging Apple from taking the server down: at most `limit` request-time calls
/// to Apple are in flight at once, and after a call could not reach Apple (a timeout, a refused
/// connection) none is made for `cooldown` seconds. A call that is not let through fails at once
/// with `IdentityError(.appleUnavailable)` (503 with `Retry-After`), so the worker threads stay
/// free for the routes that do not call Apple.
package final class AppleCallGate: Sendable {
    private struct State {
        var inFlight = 0
        /// Until when no call is let through (Unix seconds).
        var closedUntil = 0.0
    }

    package let limit: Int
    package let cooldown: Double
    private let clock: any WallClock
    private let state = Mutex(State())

    /// - Parameters:
    ///   - limit: calls in flight at once (at least 1).
    ///   - cooldown: seconds without calls after one could not reach Apple.
    package init(limit: Int, cooldown: Double = 5, clock: any WallClock = SystemClock()) {
        self.limit = max(1, limit)
        self.cooldown = cooldown
        self.clock = clock
    }

    /// Runs `call` when the gate lets it through.
    /// - Parameter unreachable: whether an error `call` threw means Apple could not be reached,
    ///   which closes the gate for the cooldown.
    /// - Throws: `IdentityError(.appleUnavailable)` when the gate is closed or full; else what
    ///   `call` throws.
    package func pass<T>(_ call: () throws -> T, unreachable: (any Error) -> Bool) throws -> T {
        let now = clock.now()
        let refusal: String? = state.withLock { state in
            if now < state.closedUntil { return "Apple could not be reached a moment ago; try again shortly" }
            if state.inFlight >= limit { return "too many calls to Apple are waiting; try again shortly" }
            state.inFlight += 1
            return nil
        }
        if let refusal { throw IdentityError(.appleUnavailable, refusal) }
        do {
            let value = try call()
            state.withLock { $0.inFlight -= 1 }
            return value
        } catch {
            let closes = unreachable(error)
            let reopening = clock.now() + cooldown
            state.withLock { state in
                state.inFlight -= 1
                if closes { state.closedUntil = max(state.closedUntil, reopening) }
            }
            throw error
        }
    }

    /// Calls in flight now (for tests and health).
    package var inFlight: Int { state.withLock { $0.inFlight } }
}
