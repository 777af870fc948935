package import MariaDB

/// The server-side state of the web flow (docs/SECURITY.md rule 6): `state` and nonce kept in MariaDB,
/// bound to the browser by the SHA-256 of a cookie; then the verified result under a one-time
/// handle, redeemed once by the same browser. Secrets are stored only as SHA-256.
package enum WebSignIns {
    /// A sign-in waiting for Apple's form post.
    package struct Pending: Sendable, Equatable {
        package var id: UInt64
        package var nonce: String
        package var returnTo: String
        /// Whether a native app started it (RFC 8252), rather than the web.
        package var isApp: Bool
    }

    /// A sign-in that came back from Apple, as its handle redeems it.
    package struct Completed: Sendable, Equatable {
        package var id: UInt64
        package var bindingHash: [UInt8]
        package var returnTo: String
        package var userID: UInt64?
        package var isNewUser: Bool
        /// Apple's `error` (such as `user_cancelled_authorize`) or our refusal code.
        package var error: String?
        /// The native app that started it, for an app's sign-in (RFC 8252); nil on the web.
        package var app: AppRequest?
    }

    /// What a native app asked for when it started a sign-in in the browser.
    package struct AppRequest: Sendable, Equatable {
        package var clientID: String
        /// The redirect URI exactly as the app sent it (a loopback one with its port).
        package var redirectURI: String
        package var state: String
        /// The S256 code challenge, decoded (32 bytes).
        package var codeChallenge: [UInt8]

        package init(clientID: String, redirectURI: String, state: String, codeChallenge: [UInt8]) {
            self.clientID = clientID
            self.redirectURI = redirectURI
            self.state = state
            self.codeChallenge = codeChallenge
        }
    }

    /// An app's one-time code, as the token endpoint finds it.
    package struct AppCode: Sendable, Equatable {
        /// The sign-in's row.
        package var id: UInt64
        package var app: AppRequest
        package var userID: UInt64
        package var isNewUser: Bool
        /// Whether it was presented before (it is spent by the first presentation, whatever its outcome).
        package var used: Bool
        package var expired: Bool
        /// The session its first presentation opened, if it opened one.
        package var sessionID: UInt64?
    }

    /// Records a new sign-in (an app's, with `app`); it expires after `lifetime` seconds.
    package static func start(
        stateHash: [UInt8], bindingHash: [UInt8], nonce: String, returnTo: String, app: AppRequest? = nil, lifetime: Int,
        on connection: Connection
    ) throws {
        _ = try connection.execute(
            """
            INSERT INTO web_sign_ins (state_hash, binding_hash, nonce, return_to, app_client_id, app_redirect_uri, app_state,
                code_challenge, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND)
            """, stateHash, bindingHash, nonce, returnTo, app?.clientID, app?.redirectURI, app?.state, app?.codeChallenge, lifetime)
    }

    /// The unexpired sign-in whose `state` has the SHA-256 `stateHash` and that has not come back
    /// yet, locked until the transaction ends.
    package static func pending(stateHash: [UInt8], on connection: Connection) throws -> Pending? {
        guard
            let row = try connection.query(
                """
                SELECT id, nonce, return_to, app_client_id IS NOT NULL AS is_app FROM web_sign_ins
                WHERE state_hash = ? AND completed_at IS NULL AND expires_at > UTC_TIMESTAMP(3) FOR UPDATE
                """, stateHash
            ).first
        else { return nil }
        return Pending(
            id: try row.decode(column: "id"), nonce: try row.decode(column: "nonce"), returnTo: try row.decode(column: "return_to"),
            isApp: try row.decode(column: "is_app"))
    }

    /// Stores the outcome under the one-time handle (its SHA-256).
    package static func complete(
        _ id: UInt64, handleHash: [UInt8], userID: UInt64?, isNewUser: Bool, error: String?, on connection: Connection
    ) throws {
        _ = try connection.execute(
            """
            UPDATE web_sign_ins SET handle_hash = ?, user_id = ?, is_new_user = ?, error = ?, completed_at = UTC_TIMESTAMP(3)
            WHERE id = ? AND completed_at IS NULL
            """, handleHash, userID, isNewUser, error.map { String($0.prefix(64)) }, id)
    }

    /// Redeems a handle once: the outcome, or nil when the handle is unknown, spent or expired.
    /// Must run inside a transaction.
    package static func redeem(handleHash: [UInt8], on connection: Connection) throws -> Completed? {
        guard
            let row = try connection.query(
                """
                SELECT id, binding_hash, return_to, user_id, is_new_user, error, app_client_id, app_redirect_uri, app_state,
                    code_challenge
                FROM web_sign_ins
                WHERE handle_hash = ? AND consumed_at IS NULL AND completed_at IS NOT NULL AND expires_at > UTC_TIMESTAMP(3)
                FOR UPDATE
                """, handleHash
            ).first
        else { return nil }
        let id: UInt64 = try row.decode(column: "id")
        _ = try connection.execute("UPDATE web_sign_ins SET consumed_at = UTC_TIMESTAMP(3) WHERE id = ?", id)
        return Completed(
            id: id, bindingHash: try row.decode(column: "binding_hash"), returnTo: try row.decode(column: "return_to"),
            userID: try row.decode(column: "user_id"), isNewUser: try row.decode(column: "is_new_user"),
            error: try row.decode(column: "error"), app: try appRequest(row))
    }

    /// The app's request of a row that has one.
    private static func appRequest(_ row: Row) throws -> AppRequest? {
        guard let clientID: String = try row.decode(column: "app_client_id") else { return nil }
        return AppRequest(
            clientID: clientID, redirectURI: try row.decode(column: "app_redirect_uri"), state: try row.decode(column: "app_state"),
            codeChallenge: try row.decode(column: "code_challenge"))
    }

    /// Gives a redeemed app sign-in its one-time code (its SHA-256), valid `lifetime` seconds.
    package static func issueCode(_ id: UInt64, codeHash: [UInt8], lifetime: Int, on connection: Connection) throws {
        _ = try connection.execute(
            "UPDATE web_sign_ins SET code_hash = ?, code_expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND WHERE id = ?",
            codeHash, lifetime, id)
    }

    /// Spends an app's code: what it was issued for, or nil for an unknown code. Every
    /// presentation spends it, whatever follows. Must run inside a transaction; the row stays
    /// locked until it ends, so a second presentation waits for the first one's session.
    package static func useCode(codeHash: [UInt8], on connection: Connection) throws -> AppCode? {
        guard
            let row = try connection.query(
                """
                SELECT id, user_id, is_new_user, app_client_id, app_redirect_uri, app_state, code_challenge,
                    code_used_at IS NOT NULL AS used, code_expires_at <= UTC_TIMESTAMP(3) AS expired, code_session_id
                FROM web_sign_ins WHERE code_hash = ? FOR UPDATE
                """, codeHash
            ).first, let app = try appRequest(row), let userID: UInt64 = try row.decode(column: "user_id")
        else { return nil }
        let id: UInt64 = try row.decode(column: "id")
        _ = try connection.execute("UPDATE web_sign_ins SET code_used_at = UTC_TIMESTAMP(3) WHERE id = ? AND code_used_at IS NULL", id)
        return AppCode(
            id: id, app: app, userID: userID, isNewUser: try row.decode(column: "is_new_user"), used: try row.decode(column: "used"),
            expired: try row.decode(column: "expired"), sessionID: try row.decode(column: "code_session_id"))
    }

    /// Records the session an app's code opened (`useCode`'s `sessionID` from then on).
    package static func recordCodeSession(_ id: UInt64, sessionID: UInt64, on connection: Connection) throws {
        _ = try connection.execute("UPDATE web_sign_ins SET code_session_id = ? WHERE id = ?", sessionID, id)
    }
}
