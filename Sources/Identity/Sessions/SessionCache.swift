import Accounts
import Foundation
package import MariaDB
import Synchronization
import Threads

/// The sessions this process has seen active recently, so that an access token's session check
/// does not read the database on every request. It stays behind the database: a session ended
/// through this process is forgotten when the ending commits; one ended by another process or host
/// is forgotten by the next poll of the revocation log (`SessionRevocations`), every
/// `pollInterval`; and the cache answers only while its last poll succeeded recently, so a
/// database it cannot poll sends every check back to the database.
package final class SessionCache: Sendable {
    /// Seconds between two polls of the revocation log.
    package static let pollInterval = 0.05
    /// A poll must have begun and succeeded this recently for the cache to answer.
    static let freshness = 0.25
    /// Seconds an entry is trusted at most (less when the session expires sooner).
    static let entryLifetime = 60.0
    /// Entries kept at most; the cache starts over when full.
    static let capacity = 100_000
    /// A check whose database read began longer ago than this is not remembered (its answer may
    /// predate a revocation the polls no longer show).
    static let rememberWithin = 1.0

    private struct State {
        /// User, then session, to its expiry on the monotonic clock.
        var users: [UInt64: [UInt64: Double]] = [:]
        var count = 0
        /// When the last successful poll began (monotonic seconds); nothing answers before one.
        var polledAt = -Double.infinity
        var pollerStarted = false
        var stopped = false

        mutating func forget(userID: UInt64, sessionID: UInt64?) {
            if let sessionID {
                if users[userID]?.removeValue(forKey: sessionID) != nil { count -= 1 }
            } else if let sessions = users.removeValue(forKey: userID) {
                count -= sessions.count
            }
        }
    }

    private let state = Mutex(State())
    private let database: Configuration
    /// The poller, joined by `stop()`.
    private let poller = Mutex<OwnedThread?>(nil)
    private let hits = Atomic<Int>(0)

    /// - Parameter database: where the poller opens its own connection.
    package init(database: Configuration) {
        self.database = database
    }

    /// Seconds on a clock that only moves forward.
    package static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Checks answered from the cache, for tests and benchmarks.
    package var hitCount: Int { hits.load(ordering: .relaxed) }

    /// Whether the session is known active, without reading the database.
    package func isKnownActive(userID: UInt64, sessionID: UInt64) -> Bool {
        let now = SessionCache.now()
        let known = state.withLock { state in
            now - state.polledAt < SessionCache.freshness && (state.users[userID]?[sessionID]).map { $0 > now } == true
        }
        if known { hits.add(1, ordering: .relaxed) }
        return known
    }

    /// Remembers a session the database found active with `secondsLeft` to live, by a read that
    /// began at `readStartedAt` (`now()`). Starts the poller on first use.
    package func remember(userID: UInt64, sessionID: UInt64, secondsLeft: Int, readStartedAt: Double) {
        let now = SessionCache.now()
        guard now - readStartedAt < SessionCache.rememberWithin, secondsLeft > 0 else { return }
        let startPoller = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if state.count >= SessionCache.capacity {
                state.users = [:]
                state.count = 0
            }
            if state.users[userID, default: [:]].updateValue(now + min(Double(secondsLeft), SessionCache.entryLifetime), forKey: sessionID)
                == nil
            {
                state.count += 1
            }
            guard !state.pollerStarted else { return false }
            state.pollerStarted = true
            return true
        }
        if startPoller {
            // Started lazily: a process that never checks a session holds no connection for it.
            // Without a thread (logged and counted) no revocation is polled: the cache then answers
            // nothing after its freshness (`polledAt` stays old) and every check goes to the database.
            let thread = OwnedThread.startIfPossible(name: "siwa-sessions") { [self] context in poll(context) }
            poller.withLock { $0 = thread }
            // A `stop()` in between did not see the thread: it is stopped here.
            if state.withLock({ $0.stopped }) { thread?.stopAndJoin() }
        }
    }

    /// Forgets a session, or every session of the user when `sessionID` is nil.
    package func forget(userID: UInt64, sessionID: UInt64? = nil) {
        state.withLock { $0.forget(userID: userID, sessionID: sessionID) }
    }

    /// Stops the poller and waits until it has closed its connection and ended; the cache
    /// answers nothing after.
    package func stop() {
        state.withLock { state in
            state.stopped = true
            state.polledAt = -Double.infinity
            state.users = [:]
            state.count = 0
        }
        poller.withLock { $0 }?.stopAndJoin()
    }

    /// The poller's loop: reads the recent revocations and forgets their sessions, every
    /// `pollInterval`, until stopped.
    private func poll(_ context: OwnedThread.Context) {
        let connection = Connection(configuration: database)
        context.own(connection)
        while !context.isStopping {
            let began = SessionCache.now()
            if let revoked = try? SessionRevocations.recent(on: connection) {
                state.withLock { state in
                    for (userID, sessionID) in revoked { state.forget(userID: userID, sessionID: sessionID) }
                    if !state.stopped { state.polledAt = began }
                }
            }
            context.waitForStop(timeout: SessionCache.pollInterval)
        }
    }
}
