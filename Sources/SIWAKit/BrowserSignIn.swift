public import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A sign-in through the system browser with PKCE (RFC 8252, RFC 7636), for an app that does not
/// use Apple's native sign-in: a desktop app, a Mac Catalyst app, a command-line tool. The server
/// must register the app's client id and redirect URI (`SIWA_APP_CLIENTS`).
///
/// Open ``url(on:)`` in the browser (on Apple's platforms, an `ASWebAuthenticationSession` with
/// the redirect URI's scheme as its callback scheme), then pass the URL the browser came back with
/// to ``SIWAClient/completeSignIn(_:callback:)``. Use each one for one sign-in.
///
/// ```swift
/// let signIn = BrowserSignIn(clientID: "desktop", redirectURI: "com.example.desktop:/apple")
/// let startURL = signIn.url(on: URL(string: "https://api.example.com/")!)
/// // Open startURL in the browser; it comes back to com.example.desktop:/apple?code=...&state=...
/// print(startURL)
/// ```
public struct BrowserSignIn: Sendable, Equatable {
    /// The app's client id, as the server registers it.
    public let clientID: String
    /// The redirect URI, as the server registers it (a loopback one with the port the app listens on).
    public let redirectURI: String
    /// The value that must come back with the browser: a new random one for each sign-in.
    public let state: String
    /// The PKCE code verifier: 32 random bytes, base64url. Only its SHA-256 leaves the app before
    /// the code comes back.
    let codeVerifier: String

    /// A new sign-in, with a random `state` and code verifier.
    /// - Parameters:
    ///   - clientID: the app's client id, as the server registers it.
    ///   - redirectURI: one of the app's registered redirect URIs: a private-use scheme
    ///     (`com.example.app:/apple`), `http://127.0.0.1:PORT/path` (any port), or https.
    public init(clientID: String, redirectURI: String) {
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.state = SignInNonce().value
        self.codeVerifier = SignInNonce().value
    }

    /// The URL to open in the browser: the server's `GET /auth/app/start` with the client, the
    /// redirect URI, the S256 code challenge and the state.
    /// - Parameter baseURL: the server's origin (and path prefix, if any), ending with `/`.
    public func url(on baseURL: URL) -> URL {
        let query = Self.formEncoded([
            ("client_id", clientID), ("redirect_uri", redirectURI), ("code_challenge", codeChallenge),
            ("code_challenge_method", "S256"), ("state", state),
        ])
        return URL(string: baseURL.appendingPathComponent("auth/app/start").absoluteString + "?" + query)!
    }

    /// `fields` form-encoded (`application/x-www-form-urlencoded`): everything but letters, digits
    /// and `-._*` percent-encoded, as the server decodes a query and a form alike.
    static func formEncoded(_ fields: [(String, String)]) -> String {
        func encoded(_ value: String) -> String {
            value.utf8.map { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                    String(UnicodeScalar(byte))
                default:
                    "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
                }
            }.joined()
        }
        return fields.map { "\(encoded($0.0))=\(encoded($0.1))" }.joined(separator: "&")
    }

    /// The S256 challenge: the base64url SHA-256 of the verifier.
    var codeChallenge: String { SignInNonce.base64URL(SignInNonce.sha256(Array(codeVerifier.utf8))) }
}

extension SIWAClient {
    /// Completes a ``BrowserSignIn`` with the URL the browser came back to: checks that it carries
    /// the sign-in's `state`, exchanges its code with the verifier at `POST /auth/token`, and keeps
    /// the session, as ``signIn(with:nonce:device:linkToken:)`` does.
    /// - Parameters:
    ///   - signIn: the sign-in whose ``BrowserSignIn/url(on:)`` the browser opened.
    ///   - callback: the URL the browser came back to (the redirect URI with `code` and `state`, or
    ///     with `error`).
    /// - Returns: the signed-in user.
    /// - Throws: `SIWAError.invalidResponse` when the URL is not the redirect URI or carries another
    ///   `state` (another sign-in's answer, never exchanged); `SIWAError.server` with the server's
    ///   refusal (`access_denied` when the person cancelled at Apple, `invalid_grant`, ...);
    ///   `.network`; `.storage` when the session cannot be stored.
    @discardableResult
    public func completeSignIn(_ signIn: BrowserSignIn, callback: URL) async throws -> User {
        let callbackText = callback.absoluteString
        let base = callbackText.split(separator: "?", maxSplits: 1).first.map(String.init) ?? callbackText
        let registered = signIn.redirectURI.split(separator: "?", maxSplits: 1).first.map(String.init) ?? signIn.redirectURI
        guard base == registered else { throw SIWAError.invalidResponse("the browser came back to another address than the redirect URI") }
        let fields = URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? []
        func field(_ name: String) -> String? { fields.last { $0.name == name }?.value }
        guard field("state") == signIn.state else {
            throw SIWAError.invalidResponse("the browser came back with another sign-in's state; nothing was exchanged")
        }
        if let error = field("error") {
            throw SIWAError.server(
                ServerError(status: 400, code: ServerError.Code(rawValue: error), message: field("error_description") ?? error))
        }
        guard let code = field("code") else { throw SIWAError.invalidResponse("the browser came back without a code") }
        var request = try api.request("POST", "auth/token")
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        let form = [
            ("grant_type", "authorization_code"), ("code", code), ("code_verifier", signIn.codeVerifier),
            ("redirect_uri", signIn.redirectURI), ("client_id", signIn.clientID),
        ]
        request.httpBody = Data(BrowserSignIn.formEncoded(form).utf8)
        // The code is spent by its first arrival: never sent twice.
        let grant: Grant = try await api.call(request, replayable: false)
        guard let user = grant.user else { throw SIWAError.invalidResponse("a sign-in answered without the user") }
        try await session.begin(grant, user: user, appleUserID: "", receivedAt: now())
        return user
    }
}
