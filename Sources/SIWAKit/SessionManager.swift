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

    static let storageKey = "session"

    init(api: ServerAPI, storage: any KeyValueStorage, now: @escaping @Sendable () -> Date, refreshMargin: TimeInterval) {
        self.api = api
        self.storage = storage
        self.now = now
        self.refreshMargin = refreshMargin
        self.session = (try? storage.read(Self.storageKey)).flatMap { try? JSONCoding.decoder().decode(StoredSession.self, from: $0) }
    }

    /// The current state.
    public var state: AuthState {
        session.map { .signedIn($0.user) } ?? .signedOut(endReason)
    }

    /// The state now and at every change, until the stream is dropped.
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
        return renewed
    }

    /// Starts the session of a sign-in's grant.
    func begin(_ grant: Grant, user: User, appleUserID: String, receivedAt: Date) throws {
        refreshing?.cancel()
        refreshing = nil
        try save(StoredSession(grant: grant, user: user, appleUserID: appleUserID, receivedAt: receivedAt))
    }

    /// Keeps the user the server last answered with.
    func update(_ user: User) throws {
        guard var session, session.user != user else { return }
        session.user = user
        try save(session)
    }

    /// Ends the session on the device (the server's side is the caller's business).
    func end(_ reason: SignOutReason) {
        refreshing?.cancel()
        refreshing = nil
        guard session != nil else { return }
        session = nil
        endReason = reason
        try? storage.delete(Self.storageKey)
        broadcast()
    }

    private func save(_ session: StoredSession) throws {
        let changedUser = self.session?.user != session.user
        try storage.write(try JSONCoding.encoder().encode(session), for: Self.storageKey)
        self.session = session
        if changedUser { broadcast() }
    }

    private func broadcast() {
        for observer in observers.values { observer.yield(state) }
    }

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }
}
