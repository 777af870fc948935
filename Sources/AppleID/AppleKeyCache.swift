import Foundation
package import Threads

/// Apple's signing keys, shared by every worker thread of the process.
///
/// - Keys live for the `Cache-Control: max-age` Apple sends, kept between a floor and a ceiling.
/// - A token with an unknown `kid` (Apple rotated its keys) causes at most one fetch per cooldown:
///   one thread fetches, the others wait for that fetch instead of starting their own, and after
///   it every unknown `kid` fails fast until the cooldown is over. A flood of made-up `kid`s
///   therefore costs Apple one request per cooldown, never one per token.
/// - When the keys expire they are still used while one thread refreshes them in the background;
///   when Apple is unreachable the last good keys keep being served (stale-while-error).
/// - A successful fetch replaces the whole set, so keys Apple removed are dropped.
///
/// `@unchecked Sendable`: all state is only touched with `condition` locked. An `NSCondition`
/// rather than a `Mutex` because threads must wait for another thread's fetch; the lock is never
/// held across the fetch itself.
package final class AppleKeyCache: AppleKeySource, @unchecked Sendable {
    package struct Settings: Sendable {
        /// The shortest time keys are trusted without refetching, whatever `max-age` says.
        package var minimumLifetime: Double = 300
        /// The longest time keys are trusted without refetching.
        package var maximumLifetime: Double = 86_400
        /// The lifetime when Apple sends no `max-age`.
        package var defaultLifetime: Double = 3_600
        /// The least time between two fetches caused by unknown `kid`s or failures.
        package var cooldown: Double = 10
        /// How long a thread waits for a fetch another thread started.
        package var waitTimeout: Double = 10

        package init() {}
    }

    /// A fetched key-set document and its `max-age`, if any.
    package struct Fetched: Sendable {
        package var body: [UInt8]
        package var maxAge: Double?

        package init(body: [UInt8], maxAge: Double?) {
            self.body = body
            self.maxAge = maxAge
        }
    }

    /// What `/health` reports.
    package enum Health: String, Sendable {
        /// Keys are cached and within their lifetime.
        case fresh = "ok"
        /// Keys are cached but past their lifetime (Apple unreachable or not asked yet).
        case stale
        /// Keys are cached and still served, but the latest fetch failed (Apple unreachable, or an
        /// answer that is not a key set): a token signed with a new key cannot be verified.
        case fetchFailing = "fetch_failing"
        /// No keys: identity tokens cannot be verified.
        case unavailable
    }

    package struct Status: Sendable {
        package var health: Health
        package var keyIDs: [String]
        package var fetchedAt: Double?
        package var expiresAt: Double
        package var fetchCount: Int
        package var lastError: String?
    }

    private struct State {
        var keys: [String: AppleKey] = [:]
        var fetchedAt: Double?
        var expiresAt: Double = 0
        var lastAttempt: Double = -.infinity
        var fetching = false
        var fetchCount = 0
        var lastError: String?
        /// The thread of the latest background refresh, joined by `stop()`.
        var refresher: OwnedThread?
        /// After `stop()`: no background refresh starts.
        var stopped = false
    }

    private let settings: Settings
    private let clock: @Sendable () -> Double
    private let fetch: @Sendable () throws -> Fetched
    private let condition = NSCondition()
    private var state = State()

    /// - Parameters:
    ///   - settings: lifetimes and cooldown.
    ///   - clock: the current Unix time (injected for tests).
    ///   - fetch: gets Apple's key set (`GET /auth/keys`); called on whichever thread needs it.
    package init(
        settings: Settings = Settings(), clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        fetch: @escaping @Sendable () throws -> Fetched
    ) {
        self.settings = settings
        self.clock = clock
        self.fetch = fetch
    }

    package func key(for keyID: String) throws -> AppleKey {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(settings.waitTimeout)
        while true {
            let now = clock()
            if let key = state.keys[keyID] {
                if now >= state.expiresAt, !state.fetching, now - state.lastAttempt >= settings.cooldown {
                    startRefresh()
                }
                return key
            }
            if state.fetching {
                // Another thread is fetching: wait for its result rather than fetching again.
                if condition.wait(until: deadline) { continue }
                throw missing(keyID)
            }
            guard now - state.lastAttempt >= settings.cooldown else { throw missing(keyID) }
            state.fetching = true
            condition.unlock()
            let outcome = fetchAndParse()
            condition.lock()
            store(outcome)
        }
    }

    /// Fetches the key set now, unless another thread already is (then waits for it). For startup.
    package func refresh() {
        condition.lock()
        if state.fetching {
            _ = condition.wait(until: Date().addingTimeInterval(settings.waitTimeout))
            condition.unlock()
            return
        }
        state.fetching = true
        condition.unlock()
        refreshNow()
    }

    /// Refreshes the keys on a thread of the cache's, unless a fetch is under way or the cache
    /// is stopped; `then` runs on that thread after the fetch. For the start of a server, which
    /// should not wait for Apple.
    /// - Throws: `ThreadStartError` when the thread cannot start (the keys stay as they are).
    package func refreshInBackground(then: @escaping @Sendable (Status) -> Void = { _ in }) throws(ThreadStartError) {
        condition.lock()
        defer { condition.unlock() }
        guard !state.fetching, !state.stopped else { return }
        state.refresher = try OwnedThread(name: Self.refresherName, refresher(then: then))
        state.fetching = true
    }

    /// Waits for a background refresh under way, and starts no other. Call before the process ends.
    package func stop() {
        condition.lock()
        state.stopped = true
        let refresher = state.refresher
        condition.unlock()
        refresher?.join()
    }

    /// The name of the refresher threads.
    private static let refresherName = "siwa-apple-keys"

    /// Starts a background refresh of keys past their lifetime, for the token that found them so;
    /// called with the lock held and no fetch under way. A thread that cannot start is logged and
    /// counted, and the token is verified with the keys there are: the next token that finds
    /// them past their lifetime tries again.
    private func startRefresh() {
        guard !state.stopped else { return }
        guard let refresher = OwnedThread.startIfPossible(name: Self.refresherName, refresher(then: { _ in })) else { return }
        state.refresher = refresher
        state.fetching = true
    }

    /// The body of a refresher thread: joins the previous refresher (which has finished its fetch,
    /// so this costs nothing), fetches and stores, then runs `then`. Made with the lock held.
    private func refresher(then: @escaping @Sendable (Status) -> Void) -> @Sendable (OwnedThread.Context) -> Void {
        let previous = state.refresher
        return { [self] _ in
            previous?.join()
            refreshNow()
            then(status)
        }
    }

    package var health: Health { status.health }

    /// A snapshot for `/health` and the logs; never fetches.
    package var status: Status {
        condition.lock()
        defer { condition.unlock() }
        let health: Health =
            if state.keys.isEmpty {
                .unavailable
            } else if state.lastError != nil {
                .fetchFailing
            } else {
                clock() < state.expiresAt ? .fresh : .stale
            }
        return Status(
            health: health, keyIDs: state.keys.keys.sorted(), fetchedAt: state.fetchedAt,
            expiresAt: state.expiresAt, fetchCount: state.fetchCount, lastError: state.lastError)
    }

    /// Fetches and stores; the caller has set `state.fetching`.
    private func refreshNow() {
        let outcome = fetchAndParse()
        condition.lock()
        store(outcome)
        condition.unlock()
    }

    private func fetchAndParse() -> Result<([AppleKey], Double?), any Error> {
        Result {
            let fetched = try fetch()
            let keys = try AppleKeySet.parse(fetched.body)
            guard !keys.isEmpty else { throw SignInError(.keysUnavailable, "the key set holds no RSA signing key") }
            return (keys, fetched.maxAge)
        }
    }

    /// Stores a fetch outcome; called with the lock held. Wakes every waiting thread.
    private func store(_ outcome: Result<([AppleKey], Double?), any Error>) {
        let now = clock()
        state.fetching = false
        state.lastAttempt = now
        state.fetchCount += 1
        switch outcome {
        case .success(let (keys, maxAge)):
            state.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
            state.fetchedAt = now
            let lifetime = min(max(maxAge ?? settings.defaultLifetime, settings.minimumLifetime), settings.maximumLifetime)
            state.expiresAt = now + lifetime
            state.lastError = nil
        case .failure(let error):
            // Keep serving what we have.
            state.lastError = "\(error)"
        }
        condition.broadcast()
    }

    /// Why `keyID` has no key: Apple's set was not fetched, or the latest fetch failed (then the
    /// key may well exist at Apple), or Apple's current set does not hold it.
    private func missing(_ keyID: String) -> SignInError {
        if state.keys.isEmpty { return SignInError(.keysUnavailable, "Apple's keys could not be fetched") }
        if let error = state.lastError {
            return SignInError(.keysUnavailable, "the kid is not among the cached keys and Apple's key set could not be fetched: \(error)")
        }
        return SignInError(.unknownKeyID, "no key with this kid in Apple's key set")
    }
}

/// `Cache-Control` parsing for the key set's lifetime.
package enum CacheControl {
    /// The `max-age` in seconds, or nil if absent or malformed. `no-cache`/`no-store` give 0
    /// (the cache's floor then applies).
    package static func maxAge(_ header: String?) -> Double? {
        guard let header else { return nil }
        for directive in header.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            switch parts.first {
            case "no-cache", "no-store": return 0
            case "max-age":
                guard parts.count == 2, let seconds = UInt32(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
                    return nil
                }
                return Double(seconds)
            default: continue
            }
        }
        return nil
    }
}
