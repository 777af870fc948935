package import MariaDB

/// Everything stored about one user, without any token, token hash or key: what the user's data
/// export (`GET /auth/account/export`) and `siwa admin show` and `export` give. Times are Unix
/// milliseconds.
package struct UserRecord: Sendable {
    package struct Email: Sendable {
        package var address: String
        package var isPrivateRelay: Bool
        package var forwardingEnabled: Bool
        package var verified: Bool
        package var createdAt: Int64
    }

    /// A Sign in with Apple identity: Apple's `sub` in a team, the client ids that hold a token
    /// (not the tokens), the consent state, and Apple's real-user signal.
    package struct Identity: Sendable {
        package var sub: String
        package var teamID: String
        /// The client id of the latest sign-in.
        package var clientID: String
        package var consentState: String
        /// Apple's `real_user_status` of the latest native sign-in: 0 unsupported, 1 unknown, 2 likely real.
        package var realUserStatus: Int64?
        package var clientIDsWithToken: [String]
        package var createdAt: Int64
    }

    /// A session, active or ended.
    package struct Session: Sendable {
        package var id: UInt64
        package var device: String?
        package var isWeb: Bool
        package var clientID: String?
        package var createdAt: Int64
        package var lastUsedAt: Int64
        package var expiresAt: Int64
        package var revokedAt: Int64?
        package var revokeReason: String?
    }

    /// One audit event.
    package struct AuditEvent: Sendable {
        package var id: UInt64
        package var type: String
        package var occurredAt: Int64
        package var userID: UInt64?
        package var sessionID: UInt64?
        package var remoteAddress: String?
        /// A JSON object as text, or nil.
        package var detail: String?
    }

    package var userID: UInt64
    package var firstName: String?
    package var lastName: String?
    package var createdAt: Int64
    package var disabledAt: Int64?
    package var disabledReason: String?
    package var emails: [Email]
    package var identities: [Identity]
    package var sessions: [Session]
    /// The user's latest audit events, newest first.
    package var auditEvents: [AuditEvent]

    /// The record of `userID`, or nil when there is no such user.
    /// - Parameter auditLimit: how many of the latest audit events to include.
    package static func load(userID: UInt64, auditLimit: Int, on connection: Connection) throws -> UserRecord? {
        guard
            let user = try connection.query(
                """
                SELECT first_name, last_name, \(UnixTime.milliseconds("created_at")) AS created_ms, \(UnixTime.milliseconds("disabled_at")) AS disabled_ms,
                    disabled_reason
                FROM users WHERE id = ?
                """, userID
            ).first
        else { return nil }
        let emails = try connection.query(
            """
            SELECT address, is_private_relay, forwarding_enabled, verified, \(UnixTime.milliseconds("created_at")) AS created_ms
            FROM user_emails WHERE user_id = ? ORDER BY id
            """, userID
        ).map { row in
            Email(
                address: try row.decode(column: "address"), isPrivateRelay: try row.decode(column: "is_private_relay"),
                forwardingEnabled: try row.decode(column: "forwarding_enabled"), verified: try row.decode(column: "verified"),
                createdAt: try row.decode(column: "created_ms"))
        }
        let identities = try connection.query(
            """
            SELECT i.sub, i.team_id, i.audience, i.consent_state, i.real_user_status, \(UnixTime.milliseconds("i.created_at")) AS created_ms,
                (SELECT GROUP_CONCAT(t.client_id ORDER BY t.client_id SEPARATOR ' ') FROM apple_tokens t WHERE t.identity_id = i.id)
                    AS clients
            FROM apple_identities i WHERE i.user_id = ? ORDER BY i.id
            """, userID
        ).map { row in
            let clients: String? = try row.decode(column: "clients")
            return Identity(
                sub: try row.decode(column: "sub"), teamID: try row.decode(column: "team_id"), clientID: try row.decode(column: "audience"),
                consentState: try row.decode(column: "consent_state"), realUserStatus: try row.decode(column: "real_user_status"),
                clientIDsWithToken: clients.map { $0.split(separator: " ").map(String.init) } ?? [],
                createdAt: try row.decode(column: "created_ms"))
        }
        let sessions = try connection.query(
            """
            SELECT id, device, cookie_hash IS NOT NULL AS is_web, apple_client_id, \(UnixTime.milliseconds("created_at")) AS created_ms,
                \(UnixTime.milliseconds("last_used_at")) AS last_used_ms, \(UnixTime.milliseconds("expires_at")) AS expires_ms,
                \(UnixTime.milliseconds("revoked_at")) AS revoked_ms, revoke_reason
            FROM sessions WHERE user_id = ? ORDER BY id
            """, userID
        ).map { row in
            Session(
                id: try row.decode(column: "id"), device: try row.decode(column: "device"), isWeb: try row.decode(column: "is_web"),
                clientID: try row.decode(column: "apple_client_id"), createdAt: try row.decode(column: "created_ms"),
                lastUsedAt: try row.decode(column: "last_used_ms"), expiresAt: try row.decode(column: "expires_ms"),
                revokedAt: try row.decode(column: "revoked_ms"), revokeReason: try row.decode(column: "revoke_reason"))
        }
        return UserRecord(
            userID: userID, firstName: try user.decode(column: "first_name"), lastName: try user.decode(column: "last_name"),
            createdAt: try user.decode(column: "created_ms"), disabledAt: try user.decode(column: "disabled_ms"),
            disabledReason: try user.decode(column: "disabled_reason"), emails: emails, identities: identities,
            sessions: sessions, auditEvents: try AuditLog.recent(userID: userID, limit: auditLimit, on: connection))
    }
}
