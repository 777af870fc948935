/// What Apple's authorization gives the app, as `SIWAClient.signIn` needs it. On Apple platforms,
/// `AppleSignInCredential(_:)` makes one from an `ASAuthorizationAppleIDCredential`.
public struct AppleSignInCredential: Sendable, Equatable {
    /// The identity token (a JWS), as UTF-8 text.
    public var identityToken: String
    /// The one-time authorization code, as UTF-8 text; the server exchanges it at Apple.
    public var authorizationCode: String?
    /// Apple's stable identifier of the person for this team (the token's `sub`).
    public var user: String
    /// The person's given name; Apple gives it on the first authorization only.
    public var givenName: String?
    /// The person's family name; Apple gives it on the first authorization only.
    public var familyName: String?

    /// A credential from its parts, for an app that reads Apple's credential itself, or a test.
    /// - Parameters:
    ///   - identityToken: the identity token (a JWS), as UTF-8 text.
    ///   - authorizationCode: the one-time authorization code, as UTF-8 text, when Apple gave one.
    ///   - user: Apple's identifier of the person (the credential's `user`).
    ///   - givenName: the given name, when Apple gave it (the first authorization).
    ///   - familyName: the family name, when Apple gave it (the first authorization).
    public init(identityToken: String, authorizationCode: String?, user: String, givenName: String? = nil, familyName: String? = nil) {
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.user = user
        self.givenName = givenName
        self.familyName = familyName
    }

    /// Whether the credential carries a name (Apple's first authorization).
    var hasName: Bool { !(givenName ?? "").isEmpty || !(familyName ?? "").isEmpty }
}

#if canImport(AuthenticationServices)
    public import AuthenticationServices
    import Foundation

    extension AppleSignInCredential {
        /// The parts of Apple's credential the server needs; nil when Apple gave no identity token.
        /// - Parameter credential: the credential of Apple's authorization.
        public init?(_ credential: ASAuthorizationAppleIDCredential) {
            guard let token = credential.identityToken.flatMap({ String(data: $0, encoding: .utf8) }) else { return nil }
            self.init(
                identityToken: token, authorizationCode: credential.authorizationCode.flatMap { String(data: $0, encoding: .utf8) },
                user: credential.user, givenName: credential.fullName?.givenName, familyName: credential.fullName?.familyName)
        }
    }
#endif
