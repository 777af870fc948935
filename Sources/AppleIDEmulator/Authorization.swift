import JOSE
import StrictJSON

/// Consent and authorization codes: what the consent page and the admin API's native sign-in
/// share.
extension Emulator {
    /// The outcome of one authorization: a code, and the `user` JSON when it was the user's first
    /// authorization of the client.
    struct Grant {
        let code: String
        let user: TestUser
        let authTime: Int64
        /// `{"name":{"firstName":..,"lastName":..},"email":..}`, only on the first authorization.
        let userJSON: String?
    }

    /// Records the user's consent to `clientID` (kept if it exists: "Hide My Email" and the scopes
    /// are chosen once), gives the user a relay address for the client if they have none, and
    /// issues a code.
    func authorize(
        userID: String, clientID: String, scopes: [String], hideEmail: Bool, redirectURI: String?, nonce: String?, now: Int64
    ) throws -> Grant {
        let code = try AppleFormats.opaqueToken(kind: "c")
        let relay = try AppleFormats.relayAddress()
        return try store.change { state in
            guard let user = state.users[userID] else { throw AdminError(404, "not_found", "no user \(userID)") }
            let pair = Pair.key(userID, clientID)
            if state.relayAddresses[pair] == nil { state.relayAddresses[pair] = relay }
            var userJSON: String?
            if state.authorizations[pair] == nil {
                state.authorizations[pair] = Authorization(
                    userID: userID, clientID: clientID, hideEmail: hideEmail, scopes: scopes, grantedAt: now)
                userJSON = Self.userJSON(user: user, scopes: scopes, email: hideEmail ? state.relayAddresses[pair]! : user.email)
            }
            state.pruneCodes(now: now)
            state.codes[code] = IssuedCode(
                userID: userID, clientID: clientID, redirectURI: redirectURI, nonce: nonce, authTime: now,
                expiresAt: now + Self.codeLifetime, used: false)
            return Grant(code: code, user: user, authTime: now, userJSON: userJSON)
        }
    }

    /// The `user` member of Apple's form post: the name and email asked for by the scopes.
    static func userJSON(user: TestUser, scopes: [String], email: String) -> String? {
        var members: [(String, JSONText.Value?)] = []
        if scopes.contains("name") {
            members.append(("name", .raw(JSONText.object([("firstName", .string(user.firstName)), ("lastName", .string(user.lastName))]))))
        }
        if scopes.contains("email") { members.append(("email", .string(email))) }
        return members.isEmpty ? nil : JSONText.object(members)
    }

    /// Creates a test user.
    func createUser(email: String?, firstName: String, lastName: String, emailVerified: Bool) throws -> TestUser {
        let id = try AppleFormats.userID()
        let address = email ?? "\(id)@example.com"
        let user = TestUser(
            id: id, sub: AppleFormats.sub(teamID: configuration.teamID, userID: id), email: address, firstName: firstName,
            lastName: lastName, emailVerified: emailVerified, relayForwarding: true)
        try store.change { $0.users[id] = user }
        return user
    }
}
