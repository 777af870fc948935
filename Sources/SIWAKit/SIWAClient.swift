public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The app's client of a siwa server: signs in with Apple's credential, keeps the session, sends
/// authenticated requests (to siwa or to the app's own API behind it), and manages the account.
///
/// ```swift
/// let client = SIWAClient(baseURL: URL(string: "https://example.com/")!,
///                         storage: KeychainStorage(service: "com.example.app"))
/// ```
public final class SIWAClient: Sendable {
    /// The session: its state stream and access token.
    public let session: SessionManager
    let api: ServerAPI
    private let storage: any KeyValueStorage
    let now: @Sendable () -> Date
    /// The hosts `send` gives the access token to: the server's, and those the app named.
    private let tokenHosts: Set<String>

    /// A client of the server at `baseURL`, with its session kept in `storage`: signed in at once
    /// when `storage` holds a session from an earlier launch.
    /// - Parameters:
    ///   - baseURL: the server's origin (and path prefix, if any), ending with `/`.
    ///   - storage: where the session is kept; `KeychainStorage` in an app.
    ///   - transport: how requests are sent; a `URLSession` by default.
    ///   - refreshMargin: an access token with less than this left is refreshed before use.
    ///   - apiHosts: other hosts of the app's own backend that verify our access tokens themselves;
    ///     `send` gives the token to the server's host and these only.
    ///   - now: the clock (tests set their own).
    public init(
        baseURL: URL, storage: any KeyValueStorage, transport: any HTTPTransport = URLSessionTransport(),
        refreshMargin: TimeInterval = 60, apiHosts: [String] = [], now: @escaping @Sendable () -> Date = { Date() }
    ) {
        api = ServerAPI(baseURL: baseURL, transport: transport)
        self.storage = storage
        self.now = now
        tokenHosts = Set(([baseURL.host] + apiHosts).compactMap { $0?.lowercased() })
        session = SessionManager(api: api, storage: storage, now: now, refreshMargin: refreshMargin)
    }

    // MARK: Sign-in

    /// Signs in with Apple's credential: `POST /auth/apple`.
    ///
    /// Apple gives the name on the first authorization only. It is kept on the device until a
    /// sign-in that carried it succeeded, and added to later sign-ins of the same Apple user until
    /// then, so a first exchange that failed does not lose it.
    ///
    /// Signed in as a guest, the sign-in carries the guest's session, and the Apple ID is attached
    /// to the guest, who keeps everything synced. If that Apple ID already belongs to another
    /// account, the server refuses with 409 `identity_in_use` (`SIWAError.server`) and the guest
    /// session stays as it was.
    /// - Parameters:
    ///   - credential: what Apple's authorization gave the app.
    ///   - nonce: the nonce whose `hashed` value was given to Apple's request.
    ///   - device: a label for the session list, such as "Jane's iPhone".
    ///   - linkToken: a link token the app's older backend minted for the person's account there
    ///     (`POST /internal/link-tokens`): the Apple ID goes to that account.
    /// - Returns: the signed-in user.
    /// - Throws: `SIWAError.server` when the server refuses the sign-in (such as `nonce_reused`,
    ///   `invalid_grant` or `identity_in_use`); `.network`; `.invalidResponse`; `.storage` when the
    ///   session cannot be stored. Signed in as a guest, also what `SessionManager.accessToken()` throws.
    @discardableResult
    public func signIn(
        with credential: AppleSignInCredential, nonce: SignInNonce, device: String? = nil, linkToken: String? = nil
    ) async throws -> User {
        var name = PendingName(credential)
        if name != nil {
            try PendingName.save(name, in: storage)
        } else {
            name = PendingName.load(from: storage).flatMap { $0.user == credential.user ? $0 : nil }
        }
        let body = SignInBody(
            identityToken: credential.identityToken, authorizationCode: credential.authorizationCode, nonce: nonce.value,
            user: credential.user, fullName: name.map { .init(givenName: $0.givenName, familyName: $0.familyName) }, device: device,
            linkToken: linkToken)
        var request = try api.request("POST", "auth/apple", json: body)
        if await session.state.user?.isGuest == true, linkToken == nil {
            request = authorized(request, try await session.accessToken())
        }
        let grant: Grant = try await api.call(request)
        guard let user = grant.user else { throw SIWAError.invalidResponse("a sign-in answered without the user") }
        try await session.begin(grant, user: user, appleUserID: credential.user, receivedAt: now())
        if name != nil { try PendingName.save(nil, in: storage) }
        return user
    }

    /// Starts as a guest (`POST /auth/guest`), when the server has guest accounts turned on: a user
    /// without an Apple ID, with a session, who syncs like anyone. A later `signIn(with:nonce:)`
    /// upgrades the guest, keeping their progress.
    /// - Parameter device: a label for the session list, such as "Jane's iPhone".
    /// - Returns: the guest user, now signed in.
    /// - Throws: `SIWAError.server` with 403 `guests_disabled` when the server does not offer them;
    ///   `.network`; `.invalidResponse`; `.storage` when the session cannot be stored.
    @discardableResult
    public func continueAsGuest(device: String? = nil) async throws -> User {
        struct GuestBody: Encodable { var device: String? }
        let grant: Grant = try await api.call(try api.request("POST", "auth/guest", json: GuestBody(device: device)))
        guard let user = grant.user else { throw SIWAError.invalidResponse("a guest account answered without the user") }
        try await session.begin(grant, user: user, appleUserID: "", receivedAt: now())
        return user
    }

    // MARK: Authenticated requests

    /// Sends `request` with the session's access token. After a 401 it refreshes the token and
    /// sends once more; after a broken connection it sends an idempotent request once more. The
    /// answer is returned whatever its status. The token goes only to the server's host and the
    /// `apiHosts` given at init, over HTTPS (or to a loopback host).
    /// - Parameter request: the request, without an `Authorization` header (the client sets it).
    /// - Returns: the answer's body and its HTTP response, whatever the status.
    /// - Throws: `SIWAError.signedOut` when there is no session or it ended; `.network`;
    ///   `.untrustedHost` for any other destination, before anything is sent.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await send(request, replayable: nil)
    }

    /// Sends `request` as `send(_:)` does and decodes its 2xx JSON answer as `T` with `decoder`
    /// (Foundation's default unless given): the typed call for the app's own API.
    /// - Parameters:
    ///   - request: the request, without an `Authorization` header (the client sets it).
    ///   - type: the type of the answer's JSON.
    ///   - decoder: the decoder of the answer.
    /// - Returns: the decoded answer.
    /// - Throws: as `send(_:)`; `SIWAError.server` for an answer that is not 2xx (its status, code
    ///   and message, when the body is the contract's JSON error); `.invalidResponse` for a 2xx
    ///   answer that is not a `T`.
    public func send<T: Decodable>(_ request: URLRequest, decoding type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        let (data, response) = try await send(request)
        try ServerAPI.check(data, response)
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw SIWAError.invalidResponse("\(request.httpMethod ?? "GET") \(request.url?.path ?? ""): \(error)")
        }
    }

    /// `send(_:)`, with the request sent again after a broken connection when `replayable` (nil: when
    /// its method is idempotent).
    func send(_ request: URLRequest, replayable: Bool?) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url, let host = url.host?.lowercased(), tokenHosts.contains(host),
            url.scheme?.lowercased() == "https" || ["localhost", "127.0.0.1", "::1"].contains(host)
        else { throw SIWAError.untrustedHost(request.url?.absoluteString ?? "") }
        let token = try await session.accessToken()
        let answer = try await api.send(authorized(request, token), replayable: replayable)
        guard answer.1.statusCode == 401 else { return answer }
        let renewed = try await session.accessToken(replacing: token)
        return try await api.send(authorized(request, renewed), replayable: replayable)
    }

    /// Sends a request to the server's `path` and decodes its 2xx JSON answer; `replayable` as in
    /// `send(_:replayable:)`.
    func authorizedCall<T: Decodable>(
        _ method: String, _ path: String, json body: (any Encodable)? = nil, replayable: Bool? = nil
    ) async throws -> T {
        let request = try api.request(method, path, json: body)
        return try ServerAPI.decoded(try await send(request, replayable: replayable), of: request)
    }

    /// Sends `body` (JSON) to the server's `path` and returns its 2xx answer's bytes; `replayable`
    /// as in `send(_:replayable:)`.
    func authorizedCall(_ method: String, _ path: String, body: Data, replayable: Bool? = nil) async throws -> Data {
        var request = try api.request(method, path)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        let (data, response) = try await send(request, replayable: replayable)
        try ServerAPI.check(data, response)
        return data
    }

    private func authorized(_ request: URLRequest, _ token: String) -> URLRequest {
        var request = request
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        return request
    }

    // MARK: Account

    /// The signed-in user, fresh from the server (`GET /auth/me`). When it differs from the user
    /// kept, the session keeps the new one and `SessionManager.events()` tells `.userUpdated`.
    /// - Returns: the user.
    /// - Throws: as `send(_:)`; `SIWAError.server` for an error answer; `.invalidResponse`;
    ///   `.storage` when the new user cannot be stored.
    public func me() async throws -> User {
        struct Me: Decodable { var user: User }
        let me: Me = try await authorizedCall("GET", "auth/me")
        try await session.update(me.user)
        return me.user
    }

    /// The user's sessions, this one marked `current` (`GET /auth/sessions`).
    /// - Returns: the sessions that are neither revoked nor expired, most recently used first.
    /// - Throws: as `send(_:)`; `SIWAError.server` for an error answer; `.invalidResponse`.
    public func sessions() async throws -> [DeviceSession] {
        struct List: Decodable { var sessions: [DeviceSession] }
        let list: List = try await authorizedCall("GET", "auth/sessions")
        return list.sessions
    }

    /// Ends one of the user's sessions (`DELETE /auth/sessions/{id}`); ending this device's own
    /// session signs it out.
    /// - Parameter id: the session's `DeviceSession.id`.
    /// - Throws: as `send(_:)`; `SIWAError.server` for an error answer (404 `not_found` for a
    ///   session that is not the user's, or already revoked).
    public func revokeSession(id: String) async throws {
        let (data, response) = try await send(api.request("DELETE", "auth/sessions/\(id)"))
        try ServerAPI.check(data, response)
        if await session.sessionID == id { await session.end(.signedOut) }
    }

    /// Signs out: the server ends the session (`POST /auth/logout`) and the device forgets it. The
    /// device forgets it even when the server cannot be reached.
    public func signOut() async {
        await endOnServer()
        await session.end(.signedOut)
    }

    /// Deletes the account and everything of it on the server (`DELETE /auth/account`), which
    /// also revokes the app's Apple tokens; then signs out. The App Store requires apps that offer
    /// sign-up to offer this.
    /// - Throws: as `send(_:)`, or `SIWAError.server` for an error answer, when the server did not
    ///   delete it; the session is kept.
    public func deleteAccount() async throws {
        let (data, response) = try await send(api.request("DELETE", "auth/account"))
        try ServerAPI.check(data, response)
        await session.end(.accountDeleted)
    }

    /// Acts on Apple's credential state, which the app reads at launch and when it comes to the
    /// foreground (`ASAuthorizationAppleIDProvider.getCredentialState(forUserID:)`).
    ///
    /// `.transferred` means the app moved to another developer team, so the Apple user id the app
    /// kept belongs to the old team. The session stays valid (it is the server's own); when
    /// convenient, sign in with Apple again: the new credential's token carries `transfer_sub`,
    /// which the server matches to the same account (see the server's docs on team transfer), and
    /// the app then keeps the new user id.
    ///
    /// Nothing happens for a guest, after a browser sign-in (``BrowserSignIn``, which leaves no Apple
    /// user id on the device), or when nobody is signed in.
    /// - Parameter state: the credential state Apple reported for `SessionManager.appleUserID`.
    /// - Returns: what was done.
    public func handleCredentialState(_ state: AppleCredentialState) async -> CredentialStateOutcome {
        // A guest, or a browser sign-in (BrowserSignIn), has no Apple user id on the device to check.
        guard case .signedIn(let user) = await session.state, !user.isGuest, await session.appleUserID?.isEmpty == false else {
            return .unchanged
        }
        switch state {
        case .authorized:
            return .unchanged
        case .transferred:
            return .transferred
        case .revoked, .notFound:
            await endOnServer()
            await session.end(.appleCredentialRevoked)
            return .signedOut
        }
    }

    /// `POST /auth/logout`, best effort: the session ends on the device whatever the answer.
    private func endOnServer() async {
        guard let request = try? api.request("POST", "auth/logout") else { return }
        _ = try? await send(request)
    }
}

/// The body of `POST /auth/apple`.
private struct SignInBody: Encodable {
    struct FullName: Encodable {
        var givenName: String?
        var familyName: String?
    }
    var identityToken: String
    var authorizationCode: String?
    var nonce: String
    var user: String
    var fullName: FullName?
    var device: String?
    var linkToken: String?
}

/// A name Apple gave that the server has not stored yet.
struct PendingName: Codable, Equatable {
    static let storageKey = "pending-name"
    var user: String
    var givenName: String?
    var familyName: String?

    init?(_ credential: AppleSignInCredential) {
        guard credential.hasName else { return nil }
        user = credential.user
        givenName = credential.givenName
        familyName = credential.familyName
    }

    static func load(from storage: any KeyValueStorage) -> PendingName? {
        (try? storage.read(storageKey)).flatMap { try? JSONDecoder().decode(PendingName.self, from: $0) }
    }

    static func save(_ name: PendingName?, in storage: any KeyValueStorage) throws {
        if let name {
            try storage.write(try JSONEncoder().encode(name), for: storageKey)
        } else {
            try storage.delete(storageKey)
        }
    }
}
