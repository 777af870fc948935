import JOSE
import StrictJSON

/// The claims of an identity token, read from its payload once. Each claim is kept as the result
/// of reading it: a value, nil when absent, or the `invalidClaim` error for a wrong JSON type, so
/// that each check raises a malformed claim at its own place in the fixed order.
struct IdentityClaims {
    let issuer: Result<String?, SignInError>
    /// `aud` as Apple sends it (a string), or an array holding exactly one string; nil otherwise.
    let audience: String?
    let expiresAt: Result<Double?, SignInError>
    let issuedAt: Result<Double?, SignInError>
    let notBefore: Result<Double?, SignInError>
    let subject: Result<String?, SignInError>
    let email: Result<String?, SignInError>
    let transferSubject: Result<String?, SignInError>
    let emailVerified: Result<Bool?, SignInError>
    let isPrivateEmail: Result<Bool?, SignInError>
    let nonceSupported: Result<Bool?, SignInError>
    let authTime: Result<Double?, SignInError>
    let realUserStatus: Result<Int?, SignInError>
    let nonce: Result<String?, SignInError>
    let codeHash: Result<String?, SignInError>

    init(_ payload: JSONObject) {
        issuer = Self.read { try payload.stringClaim("iss") }
        audience = Self.audience(of: payload)
        expiresAt = Self.read { try payload.numericDate("exp") }
        issuedAt = Self.read { try payload.numericDate("iat") }
        notBefore = Self.read { try payload.numericDate("nbf") }
        subject = Self.read { try payload.stringClaim("sub") }
        email = Self.read { try payload.stringClaim("email") }
        transferSubject = Self.read { try payload.stringClaim("transfer_sub") }
        emailVerified = Self.read { try payload.appleBoolean("email_verified") }
        isPrivateEmail = Self.read { try payload.appleBoolean("is_private_email") }
        nonceSupported = Self.read { try payload.appleBoolean("nonce_supported") }
        authTime = Self.read { try payload.numericDate("auth_time") }
        realUserStatus = Self.read {
            // One lookup: nil when absent, a type error when not an integer.
            let value: Int64?
            do {
                value = try payload.integer("real_user_status")
            } catch {
                throw SignInError(.invalidClaim, "real_user_status must be an integer")
            }
            guard let value else { return nil }
            guard let status = Int(exactly: value) else { throw SignInError(.invalidClaim, "real_user_status must be an integer") }
            return status
        }
        nonce = Self.read { try payload.stringClaim("nonce") }
        codeHash = Self.read { try payload.stringClaim("c_hash") }
    }

    /// Throws the first malformed claim among those the server keeps besides the checked ones.
    func checkTypes() throws {
        _ = try email.get()
        _ = try transferSubject.get()
        _ = try emailVerified.get()
        _ = try isPrivateEmail.get()
        _ = try nonceSupported.get()
        _ = try authTime.get()
        _ = try realUserStatus.get()
    }

    private static func read<Value>(_ body: () throws -> Value?) -> Result<Value?, SignInError> {
        do {
            return .success(try body())
        } catch let error as SignInError {
            return .failure(error)
        } catch {
            return .failure(SignInError(.invalidClaim, "\(error)"))
        }
    }

    /// `aud` as Apple sends it (a string), or an array holding exactly one string; nil otherwise.
    static func audience(of payload: JSONObject) -> String? {
        // A string (Apple's form) is read with one lookup; anything else is looked at again.
        if let audience = try? payload.string("aud") { return audience }
        guard payload.kind(of: "aud") == .array, let values = try? payload.stringArray("aud"), values.count == 1 else { return nil }
        return values[0]
    }
}

extension IdentityToken {
    /// Apple's relay domain, and the one it announced in 2026 for new addresses: the default
    /// domains of `emailIsPrivateRelay(domains:)`.
    package static let appleRelayDomains = ["privaterelay.appleid.com", "private.icloud.com"]

    /// Whether the token's email is a Hide My Email (private relay) address
    /// (`isPrivateRelay(_:tokenSays:domains:)`); nil when the token has no email.
    package func emailIsPrivateRelay(domains: [String]) -> Bool? {
        email.map { Self.isPrivateRelay($0, tokenSays: isPrivateEmail, domains: domains) }
    }

    /// Whether `email` is a Hide My Email (private relay) address: as the token's
    /// `is_private_email` claim says, else, since that claim is sometimes absent, by the address's
    /// domain (after its last `@`, compared without case) being one of `domains` (lowercased).
    package static func isPrivateRelay(_ email: String, tokenSays isPrivateEmail: Bool?, domains: [String]) -> Bool {
        if let isPrivateEmail { return isPrivateEmail }
        guard let at = email.lastIndex(of: "@") else { return false }
        return domains.contains(email[email.index(after: at)...].lowercased())
    }
}
