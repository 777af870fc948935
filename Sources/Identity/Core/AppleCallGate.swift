import Foundation

/// Keeps a slow or hanging Apple from taking the server down: at most `limit` request-time calls
/// to Apple are in flight at once, and after a call could not reach Apple (a timeout, a refused
/// connection) none is made for `cooldown` seconds.
///
/// Beyond the limit, a call waits at most `wait` seconds for a slot, so that a burst (an app's
/// launch after a release) is served a moment later instead of refused. While Apple answers
/// promptly (every call in flight began less than half of `wait` ago) any number of calls may wait:
/// each gets a slot within about one of Apple's latencies. Once a call in flight has taken longer
/// (Apple slow or hanging), only `waiting` calls may wait and any other is refused at once, so that
/// the worker threads beyond `limit + waiting` stay free for the routes that do not call Apple. The
/// cost: while Apple answers promptly, a burst of sign-ins larger than the threads can hold every
/// thread for up to `wait`, and other routes queue behind it that long. A call that is
/// not let through fails with `IdentityError(.appleUnavailable)` (503 with `Retry-After`).
package final class AppleCallGate: Sendable {
    private struct State {
        var inFlight = 0
        var waiting = 0
        /// When each call in flight began (clock seconds), by its ticket.
        var started: [Int: Double] = [:]
        var nextTicket = 0
        /// Until when no call is let through (Unix seconds).
        var closedUntil = 0.0
    }

    package let limit: Int
    package let waitingLimit: Int
    package let wait: Double
    package let cooldown: Double
    private let clock: any WallClock
    /// Guards `state`; a call that ends signals one waiting call.
    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()

    /// - Parameters:
    ///   - limit: calls in flight at once (at least 1).
    ///   - waiting: calls that may wait for a slot beyond them.
    ///   - wait: how long one waits at most, in seconds.
    ///   - cooldown: seconds without calls after one could not reach Apple.
    package init(limit: Int, waiting: Int = 0, wait: Double = 1, cooldown: Double = 5, clock: any WallClock = SystemClock()) {
        self.limit = max(1, limit)
        self.waitingLimit = max(0, waiting)
        self.wait = wait
        self.cooldown = cooldown
        self.clock = clock
    }

    /// Runs `call` when the gate lets it through.
    /// - Parameter unreachable: whether an error `call` threw means Apple could not be reached,
    ///   which closes the gate for the cooldown.
    /// - Throws: `IdentityError(.appleUnavailable)` when the gate is closed, or full for longer
    ///   than a call may wait; else what `call` throws.
    package func pass<T>(_ call: () throws -> T, unreachable: (any Error) -> Bool) throws -> T {
        let ticket = try enter()
        do {
            let value = try call()
            leave(ticket, closing: false)
            return value
        } catch {
            leave(ticket, closing: unreachable(error))
            throw error
        }
    }

    /// Takes a slot, waiting for one if the gate is full (`AppleCallGate`: who may wait); returns
    /// the call's ticket.
    private func enter() throws -> Int {
        condition.lock()
        defer { condition.unlock() }
        try refuseWhileClosed()
        if state.inFlight < limit { return take() }
        let full = IdentityError(.appleUnavailable, "too many calls to Apple are waiting; try again shortly")
        guard state.waiting < waitingLimit || appleAnswers else { throw full }
        state.waiting += 1
        defer { state.waiting -= 1 }
        let deadline = Date(timeIntervalSinceNow: wait)
        while state.inFlight >= limit {
            if !condition.wait(until: deadline), state.inFlight >= limit { throw full }
            // Apple became unreachable while this call waited.
            try refuseWhileClosed()
        }
        return take()
    }

    /// Whether every call in flight began less than half of `wait` ago. Called with the lock held.
    private var appleAnswers: Bool {
        guard let oldest = state.started.values.min() else { return true }
        return clock.now() - oldest < wait / 2
    }

    /// Counts a call in flight from now. Called with the lock held.
    private func take() -> Int {
        state.inFlight += 1
        state.nextTicket &+= 1
        state.started[state.nextTicket] = clock.now()
        return state.nextTicket
    }

    private func refuseWhileClosed() throws {
        if clock.now() < state.closedUntil {
            throw IdentityError(.appleUnavailable, "Apple could not be reached a moment ago; try again shortly")
        }
    }

    /// Frees the slot; after a call that could not reach Apple, closes the gate for the cooldown
    /// and lets every waiting call know.
    private func leave(_ ticket: Int, closing: Bool) {
        let reopening = clock.now() + cooldown
        condition.lock()
        defer { condition.unlock() }
        state.inFlight -= 1
        state.started[ticket] = nil
        if closing {
            state.closedUntil = max(state.closedUntil, reopening)
            condition.broadcast()
        } else {
            condition.signal()
        }
    }

    /// Calls in flight now (for tests and health).
    package var inFlight: Int { locked { $0.inFlight } }

    /// Calls waiting for a slot now.
    package var waiting: Int { locked { $0.waiting } }

    private func locked<T>(_ read: (State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return read(state)
    }
}
