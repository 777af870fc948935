import StrictJSON

/// A change in a user's life the app's own backend hears about through its webhooks.
package enum LifecycleEvent: Sendable, Equatable {
    /// A sign-in created the user (`flow`: `native`, `web`, or `guest` for a guest account), with
    /// what Apple gave about them.
    case userCreated(flow: String, email: String?, firstName: String?, lastName: String?)
    /// The user is gone (`source`: `user`, `apple_account_delete`, `operator`, or `guest_expired`
    /// for a guest purged after going unused); anonymised
    /// rather than deleted when the server is set to keep the row. Every session ended with it.
    case userDeleted(source: String, anonymised: Bool)
    /// Sessions ended (`reason`: `logout`, `revoked_by_user`, `refresh_token_reuse`, `code_reused`,
    /// `apple_consent_revoked`, `user_disabled`, `revoked_by_operator`).
    case sessionsRevoked(ids: [UInt64], reason: String)
    /// The person withdrew the app's access to their Apple Account (`source`:
    /// `apple_notification`, or `token_check` for the daily check at Apple, which names the client id).
    case appleConsentRevoked(source: String, clientID: String?)
    /// Mail forwarding of a relay address (of all of them when nil) was turned off or on.
    case emailForwardingChanged(address: String?, enabled: Bool)
    /// A sign-in attached an Apple ID to an account that existed without it (`by`: `guest`,
    /// `link_token` with the older backend's `externalId`, or `team_transfer`).
    case appleIdLinked(by: String, externalID: String?)

    /// The `type` receivers switch on.
    package var type: String {
        switch self {
        case .userCreated: "user.created"
        case .userDeleted: "user.deleted"
        case .sessionsRevoked: "session.revoked"
        case .appleConsentRevoked: "apple.consent_revoked"
        case .emailForwardingChanged: "email.forwarding_changed"
        case .appleIdLinked: "apple.id_linked"
        }
    }

    /// The event's own fields, as a JSON object.
    package var data: String {
        switch self {
        case .userCreated(let flow, let email, let firstName, let lastName):
            JSONText.object([
                ("flow", .string(flow)), ("email", email.map { .string($0) }), ("firstName", firstName.map { .string($0) }),
                ("lastName", lastName.map { .string($0) }),
            ])
        case .userDeleted(let source, let anonymised):
            JSONText.object([("source", .string(source)), ("anonymised", .bool(anonymised))])
        case .sessionsRevoked(let ids, let reason):
            JSONText.object([
                ("sessionIds", .raw("[" + ids.map { JSONText.quoted(String($0)) }.joined(separator: ",") + "]")),
                ("reason", .string(reason)),
            ])
        case .appleConsentRevoked(let source, let clientID):
            JSONText.object([("source", .string(source)), ("clientId", clientID.map { .string($0) })])
        case .emailForwardingChanged(let address, let enabled):
            JSONText.object([("email", address.map { .string($0) }), ("forwardingEnabled", .bool(enabled))])
        case .appleIdLinked(let by, let externalID):
            JSONText.object([("by", .string(by)), ("externalId", externalID.map { .string($0) })])
        }
    }

    /// Whether there is anything to report (a revocation that ended no session is not).
    var isEmpty: Bool {
        if case .sessionsRevoked(let ids, _) = self { return ids.isEmpty }
        return false
    }
}
