import Foundation

/// The session on this device: the access token, refreshed ahead of its expiry with one refresh in
/// flight however many callers ask; the refresh token kept across launches in the storage; and the
/// auth state, as a stream.
///
/// A network error or a busy server keeps the session (the next call tries again; a refresh whose
/// answer was lost is answered again by the server within its reuse interval). The session ends
/// when the server refuses the refresh token: reused (`token_reused`), or a session that was
/// revoked, expired or belongs to a deleted account (`invalid_token`).
public actor SessionManager {
    private let api: ServerAPI
    private let storage: any KeyValueStorage
    private let now: @Sendable () -> Date
    /// An access token this close to its expiry is refreshed before it is used.
    private let refreshMargin: TimeInterval
    private var session: StoredSession?
    private var endReason: SignOutReason = .neverSignedIn
    private var refreshing: Task<StoredSession, any Error>?
    private var observers: [UUID: AsyncStream<AuthState>.Continuation] = [:]
    private var eventObservers: [UUID: AsyncStream<AuthEvent>.Continuation] = [:]
    /// The state as the last change left it, for reading without `await`.
    private nonisolated let latest: LatestState

    static let storageKey = "session"

    init(api: ServerAPI, storage: any KeyValueStorage, now: @escaping @Sendable () -> Date, refreshMargin: TimeInterval) {
        self.api = api
        self.storage = storage
        self.now = now
        self.refreshMargin = refreshMargin
        let stored = (try? storage.read(Self.storageKey)).flatMap { try? JSONCoding.decoder().decode(StoredSession.self, from: $0) }
        self.session = stored
        self.latest = LatestState(stored.map { .signedIn($0.user) } ?? .signedOut(.neverSignedIn), sessionID: stored?.sessionID)
    }

    /// The current state, read without `await` (a SwiftUI view's body, a synchronous callback): the
    /// same as `state` once the change being made is done.
    public nonisolated var currentState: AuthState { latest.state }

    /// The signed-in person, read without `await`; nil when signed out.
    public nonisolated var currentUser: User? { latest.state.user }

    /// The id of the server's session, read without `await`; nil when signed out.
    public nonisolated var currentSessionID: String? { latest.sessionID }

    /// The current state.
    public var state: AuthState {
        session.map { .signedIn($0.user) } ?? .signedOut(endReason)
    }

    /// The state now and at every change, until the stream is dropped.
    /// - Returns: a stream that starts with the current state; it keeps the newest 8 states when
    ///   read slowly.
    public func states() -> AsyncStream<AuthState> {
        let (stream, continuation) = AsyncStream.makeStream(of: AuthState.self, bufferingPolicy: .bufferingNewest(8))
        let id = UUID()
        observers[id] = continuation
        continuation.yield(state)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        return stream
    }

    /// What happened to the session from now on, one event per change and only on a change: a
    /// sign-in, a token refresh, a changed user (as the server answered it), a sign-out with its
    /// reason. Unlike `states()`, it starts with nothing: read `currentState` for where things stand.
    /// - Returns: a stream of the events from now on, until it is dropped; it keeps the newest 32
    ///   events when read slowly.
    public func events() -> AsyncStream<AuthEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AuthEvent.self, bufferingPolicy: .bufferingNewest(32))
        let id = UUID()
        eventObservers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeEventObserver(id) }
        }
        return stream
    }

    /// Calls `apply` on the main actor with the state now (and no event), then with each event and
    /// the state it left, until the calling task is cancelled: what a view model does.
    /// - Parameter apply: called with the event (nil the first time) and the state after it.
    public func follow(_ apply: @MainActor @Sendable (AuthEvent?, AuthState) -> Void) async {
        let events = events()
        await apply(nil, state)
        for await event in events { await apply(event, currentState) }
    }

    /// The id of the server's session, when signed in.
    public var sessionID: String? { session?.sessionID }

    /// Apple's identifier of the signed-in person (the credential's `user`): what
    /// `ASAuthorizationAppleIDProvider.getCredentialState(forUserID:)` asks for.
    public var appleUserID: String? { session?.appleUserID }

    /// An access token valid for at least the refresh margin, refreshing it first if needed.
    /// - Throws: `SIWAError.signedOut` when nobody is signed in or the refresh ended the session;
    ///   `.network` or `.server` when the refresh failed and the session is kept.
    public func accessToken() async throws -> String {
        guard let session else { throw SIWAError.signedOut }
        if session.accessTokenExpiresAt.timeIntervalSince(now()) > refreshMargin, refreshing == nil {
            return session.accessToken
        }
        return try await refresh().accessToken
    }

    /// A new access token after the server refused `rejected` (401): refreshed unless another caller
    /// already replaced it.
    func accessToken(replacing rejected: String) async throws -> String {
        guard let session else { throw SIWAError.signedOut }
        if session.accessToken != rejected, refreshing == nil { return session.accessToken }
        return try await refresh().accessToken
    }

    /// The refresh in flight, or a new one of the current session.
    private func refresh() async throws -> StoredSession {
        if let refreshing { return try await refreshing.value }
        guard let session else { throw SIWAError.signedOut }
        let task = Task { try await performRefresh(of: session) }
        refreshing = task
        defer { if refreshing == task { refreshing = nil } }
        return try await task.value
    }

    private func performRefresh(of current: StoredSession) async throws -> StoredSession {
        struct Body: Encodable { var refreshToken: String }
        let grant: Grant
        do {
            // Sent again at once after a broken connection: if the server rotated the token and
            // its answer was lost, it answers the same refresh token again within its reuse interval.
            let request = try api.request("POST", "auth/refresh", json: Body(refreshToken: current.refreshToken))
            grant = try await api.call(request, replayable: true)
        } catch SIWAError.server(let error) where error.status == 401 {
            end(error.code == "token_reused" ? .refreshTokenReused : .sessionEnded)
            throw SIWAError.signedOut
        }
        guard session?.sessionID == current.sessionID else { throw SIWAError.signedOut }  // signed out meanwhile
        let renewed = StoredSession(grant: grant, user: current.user, appleUserID: current.appleUserID, receivedAt: now())
        try save(renewed)
        publish(.tokenRefreshed)
        return renewed
    }

    /// Starts the session of a sign-in's grant.
    func begin(_ grant: Grant, user: User, appleUserID: String, receivedAt: Date) throws {
        refreshing?.cancel()
        refreshing = nil
        try save(StoredSession(grant: grant, user: user, appleUserID: appleUserID, receivedAt: receivedAt))
        publish(.signedIn(user))
    }

    /// Keeps the user the server last answered with; an event only when it changed.
    func update(_ user: User) throws {
        guard var session, session.user != user else { return }
        session.user = user
        try save(session)
        publish(.userUpdated(user))
    }

    /// Ends the session on the device (the server's side is the caller's business).
    func end(_ reason: SignOutReason) {
        refreshing?.cancel()
        refreshing = nil
        guard session != nil else { return }
        session = nil
        endReason = reason
        try? storage.delete(Self.storageKey)
        latest.set(state, sessionID: nil)
        broadcast()
        publish(.signedOut(reason))
    }

    private func save(_ session: StoredSession) throws {
        let changedUser = self.session?.user != session.user
        try storage.write(try JSONCoding.encoder().encode(session), for: Self.storageKey)
        self.session = session
        latest.set(state, sessionID: session.sessionID)
        if changedUser { broadcast() }
    }

    private func broadcast() {
        for observer in observers.values { observer.yield(state) }
    }

    private func publish(_ event: AuthEvent) {
        for observer in eventObservers.values { observer.yield(event) }
    }

    private func removeEventObserver(_ id: UUID) {
        eventObservers[id] = nil
    }

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }
}

/// The state as the last change left it, behind a lock, so it can be read without `await`.
final class LatestState: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (state: AuthState, sessionID: String?)

    init(_ state: AuthState, sessionID: String?) { value = (state, sessionID) }

    var state: AuthState { lock.withLock { value.state } }
    var sessionID: String? { lock.withLock { value.sessionID } }

    func set(_ state: AuthState, sessionID: String?) { lock.withLock { value = (state, sessionID) } }
}
