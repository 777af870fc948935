package import AccountData
package import MariaDB

/// The app's own sessions: one per device, each with a family of refresh tokens that rotate on
/// every use (docs/SECURITY.md rule 3). Tokens and cookies are stored only as SHA-256; the callers make
/// them and hash them.
package enum Sessions {
    /// A session that is neither revoked nor expired.
    package struct Active: Sendable, Equatable {
        package var sessionID: UInt64
        package var userID: UInt64

        package init(sessionID: UInt64, userID: UInt64) {
            self.sessionID = sessionID
            self.userID = userID
        }
    }

    /// What presenting a refresh token led to.
    package enum Rotation: Sendable, Equatable {
        /// The token was current: it is now spent and `nextHash` is the session's token.
        case rotated(Active)
        /// The token was spent by the latest rotation, within the reuse interval (a retry whose
        /// answer was lost): the token that answer carried is retired and `nextHash` is the session's.
        case reissued(Active)
        /// No such token.
        case unknown
        /// The token's session is revoked or expired.
        case inactive
        /// The token was already spent: the session (the whole token family) has been revoked.
        case reused(Active)
    }

    /// A maximum lifetime that never ends a session (no `SIWA_SESSION_MAX_LIFETIME`): 100 years.
    package static let unlimited = 3_153_600_000

    /// The longest device label kept.
    package static let maximumDeviceLength = 128

    /// Creates the session `id` (taken from `IDBlocks`) with its first refresh token (native) or its
    /// cookie (web). For a new user the writes go with the transaction's next statement or its COMMIT.
    /// - Throws: `AccountDisabled` when the user is disabled (or gone).
    /// - Parameters:
    ///   - appleClientID: the client id (bundle id or Services ID) the user signed in with; Apple
    ///     refusing that client's token ends the session.
    ///   - lifetime: seconds without use after which the session expires.
    ///   - maximumLifetime: seconds after which the session ends however often it is refreshed.
    ///   - userIsNew: the user was created by this same transaction, so nobody can have disabled
    ///     it: the session is inserted without reading the user's row, and without waiting for the
    ///     insert's result.
    /// - Returns: `id`.
    @discardableResult
    package static func create(
        id: UInt64, userID: UInt64, appleClientID: String?, device: String?, refreshTokenHash: [UInt8]?, cookieHash: [UInt8]?,
        lifetime: Int, maximumLifetime: Int = unlimited, userIsNew: Bool = false, on connection: Connection
    ) throws -> UInt64 {
        let device = AppleAccounts.sanitizedName(device, maximum: maximumDeviceLength)
        let columns: SQL = "INSERT INTO sessions (id, user_id, apple_client_id, device, cookie_hash, expires_at)"
        let expiry = min(lifetime, maximumLifetime)
        if userIsNew {
            try connection.executeWithNext(
                "\(columns) VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND)", id, userID, appleClientID, device, cookieHash,
                expiry)
        } else {
            // Only for a user who is not disabled, in the same statement: it reads the user's row
            // with a shared lock, so a disabling (`UserStatus.disable`) either waits for this
            // transaction and then ends its session, or commits first and is seen here.
            let inserted = try connection.execute(
                "\(columns) SELECT ?, id, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND FROM users WHERE id = ? AND disabled_at IS NULL",
                id, appleClientID, device, cookieHash, expiry, userID)
            guard inserted.affectedRows == 1 else { throw AccountDisabled(userID: userID) }
        }
        if let refreshTokenHash {
            try connection.executeWithNext("INSERT INTO refresh_tokens (token_hash, session_id) VALUES (?, ?)", refreshTokenHash, id)
        }
        return id
    }

    /// Spends the refresh token `presentedHash` and makes `nextHash` the session's token, extending
    /// the session by `lifetime`. A spent token presented again revokes its session and records a
    /// `refresh_token_reuse` audit event, except the token the session rotated away from last,
    /// presented again within `reuseInterval` seconds (a retry whose answer was lost): it retires
    /// the token that answer carried and makes `nextHash` the session's token, so that a session
    /// never has more than one live token. Must run inside a transaction, which the caller commits
    /// also for `.reused` (so the revocation stays); the writes go with its COMMIT.
    package static func rotate(
        presentedHash: [UInt8], nextHash: [UInt8], lifetime: Int, maximumLifetime: Int = unlimited, reuseInterval: Int = 0,
        remoteAddress: String?, on connection: Connection
    ) throws -> Rotation {
        guard
            let row = try connection.query(
                """
                SELECT t.session_id, s.user_id, t.spent_at IS NOT NULL AS spent, \(activeCondition) AS active,
                    s.previous_token_hash <=> t.token_hash AND s.rotated_at > UTC_TIMESTAMP(3) - INTERVAL ? SECOND AS retried
                FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
                WHERE t.token_hash = ? FOR UPDATE
                """, reuseInterval, presentedHash
            ).first
        else { return .unknown }
        let session = Active(sessionID: try row.decode(column: "session_id"), userID: try row.decode(column: "user_id"))
        let spent: Bool = try row.decode(column: "spent")
        let active: Bool = try row.decode(column: "active")
        let retried: Bool = try row.decode(column: "retried")
        guard active else { return .inactive }
        if spent && retried {
            try connection.executeWithNext(
                "UPDATE refresh_tokens SET spent_at = UTC_TIMESTAMP(3) WHERE session_id = ? AND spent_at IS NULL", session.sessionID)
            // Extended by `lifetime`, never past `maximumLifetime` after the session began.
            try connection.executeWithNext(
                """
                UPDATE sessions s SET s.last_used_at = UTC_TIMESTAMP(3),
                    s.expires_at = LEAST(UTC_TIMESTAMP(3) + INTERVAL ? SECOND, s.created_at + INTERVAL ? SECOND)
                WHERE s.id = ?
                """, lifetime, maximumLifetime, session.sessionID)
            try connection.executeWithNext("INSERT INTO refresh_tokens (token_hash, session_id) VALUES (?, ?)", nextHash, session.sessionID)
            return .reissued(session)
        } else if spent {
            _ = try revoke(session.sessionID, reason: "refresh_token_reuse", on: connection)
            try AuditLog.record(
                "refresh_token_reuse", userID: session.userID, sessionID: session.sessionID, remoteAddress: remoteAddress,
                on: connection)
            return .reused(session)
        } else {
            // One statement spends the token, extends its session (by `lifetime`, never past
            // `maximumLifetime` after the session began) and remembers the rotation (both rows are
            // locked above).
            try connection.executeWithNext(
                """
                UPDATE refresh_tokens t JOIN sessions s ON s.id = t.session_id
                SET t.spent_at = UTC_TIMESTAMP(3), s.last_used_at = UTC_TIMESTAMP(3),
                    s.expires_at = LEAST(UTC_TIMESTAMP(3) + INTERVAL ? SECOND, s.created_at + INTERVAL ? SECOND),
                    s.previous_token_hash = t.token_hash, s.rotated_at = UTC_TIMESTAMP(3)
                WHERE t.token_hash = ?
                """, lifetime, maximumLifetime, presentedHash)
        }
        try connection.executeWithNext("INSERT INTO refresh_tokens (token_hash, session_id) VALUES (?, ?)", nextHash, session.sessionID)
        return .rotated(session)
    }

    /// The user whose session `sessionID` is not revoked (it may have expired); nil when none is.
    package static func owner(ofUnrevoked sessionID: UInt64, on connection: Connection) throws -> UInt64? {
        try connection.query("SELECT user_id FROM sessions WHERE id = ? AND revoked_at IS NULL", sessionID).first?.decode(column: "user_id")
    }

    /// The condition that the session `s` holds as long as it is active, for statements that check
    /// a session along with what they read.
    static let activeCondition: SQL = "s.revoked_at IS NULL AND s.expires_at > UTC_TIMESTAMP(3)"

    /// The session `sessionID` of `userID` when it is active (for access tokens, which name both).
    package static func isActive(sessionID: UInt64, userID: UInt64, on connection: Connection) throws -> Bool {
        try secondsLeft(sessionID: sessionID, userID: userID, on: connection) != nil
    }

    /// The seconds until the session `sessionID` of `userID` expires, by the database's clock; nil
    /// when it is not active.
    package static func secondsLeft(sessionID: UInt64, userID: UInt64, on connection: Connection) throws -> Int? {
        try connection.query(
            """
            SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), s.expires_at) AS seconds_left
            FROM sessions s WHERE s.id = ? AND s.user_id = ? AND \(activeCondition)
            """, sessionID, userID
        ).first?.decode(column: "seconds_left")
    }

    /// Which of `sessions` are active, read with shared locks that keep them so (a revocation waits)
    /// until the transaction ends: one statement for up to 64 sessions.
    static func active(_ sessions: [Pair], on connection: Connection) throws -> Set<Pair> {
        var active = Set<Pair>()
        for chunk in SQL.chunks(sessions) {
            let sql: SQL = """
                SELECT s.id, s.user_id FROM sessions s
                WHERE s.id IN (\(list: chunk.map(\.sessionID))) AND \(activeCondition) LOCK IN SHARE MODE
                """
            for row in try connection.query(sql) {
                active.insert(Pair(sessionID: try row.decode(column: "id"), userID: try row.decode(column: "user_id")))
            }
        }
        return active
    }

    /// A session and its user.
    struct Pair: Hashable {
        var sessionID: UInt64
        var userID: UInt64
    }

    /// The active session whose cookie has the SHA-256 `cookieHash`.
    package static func active(cookieHash: [UInt8], on connection: Connection) throws -> Active? {
        guard
            let row = try connection.query(
                "SELECT id, user_id FROM sessions WHERE cookie_hash = ? AND revoked_at IS NULL AND expires_at > UTC_TIMESTAMP(3)",
                cookieHash
            ).first
        else { return nil }
        return Active(sessionID: try row.decode(column: "id"), userID: try row.decode(column: "user_id"))
    }

    /// The active sessions of `userID`, most recently used first.
    package static func list(userID: UInt64, on connection: Connection) throws -> [SessionSummary] {
        try connection.query(
            """
            SELECT id, device, cookie_hash IS NOT NULL AS is_web, \(UnixTime.seconds("created_at")) AS created,
                \(UnixTime.seconds("last_used_at")) AS last_used, \(UnixTime.seconds("expires_at")) AS expires
            FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > UTC_TIMESTAMP(3)
            ORDER BY last_used_at DESC, id DESC LIMIT 500
            """, userID
        ).map { row in
            SessionSummary(
                id: try row.decode(column: "id"), device: try row.decode(column: "device"), isWeb: try row.decode(column: "is_web"),
                createdAt: try row.decode(column: "created"), lastUsedAt: try row.decode(column: "last_used"),
                expiresAt: try row.decode(column: "expires"))
        }
    }

    /// Revokes one session (only if it is `userID`'s, when given: a user revokes only their own)
    /// and logs the revocation (`SessionRevocations`); false when there is no such active session.
    /// Its expiry becomes the revocation, from which its retention counts (`GrowingTable`). Must run
    /// inside a transaction.
    package static func revoke(_ sessionID: UInt64, of userID: UInt64? = nil, reason: String, on connection: Connection) throws -> Bool {
        guard
            let owner: UInt64 = try connection.query(
                "SELECT user_id FROM sessions WHERE id = ? AND user_id = COALESCE(?, user_id) AND revoked_at IS NULL FOR UPDATE",
                sessionID, userID
            ).first?.decode(column: "user_id")
        else { return false }
        _ = try connection.execute(
            """
            UPDATE sessions SET revoked_at = UTC_TIMESTAMP(3), revoke_reason = ?, expires_at = LEAST(expires_at, UTC_TIMESTAMP(3))
            WHERE id = ?
            """, reason, sessionID)
        try SessionRevocations.record(userID: owner, sessionID: sessionID, on: connection)
        return true
    }

    /// Revokes every session of `userID`.
    /// - Returns: the ids of the sessions that were active.
    package static func revokeAll(of userID: UInt64, reason: String, on connection: Connection) throws -> [UInt64] {
        try revoke(of: userID, openedWith: nil, reason: reason, on: connection)
    }

    /// Revokes the sessions of `userID` opened with the Apple client id `clientID`, and those whose
    /// client id is unknown (opened before it was recorded).
    /// - Returns: the ids of the sessions that ended.
    package static func revokeAll(
        of userID: UInt64, openedWith clientID: String, reason: String, on connection: Connection
    ) throws -> [UInt64] {
        try revoke(of: userID, openedWith: clientID, reason: reason, on: connection)
    }

    /// Revokes the not yet revoked sessions of `userID` (all, or those opened with `clientID` and
    /// those of an unknown client id), locking them first so that the ids returned are exactly
    /// those revoked, and logs the revocation for every session of the user (`SessionRevocations`).
    private static func revoke(of userID: UInt64, openedWith clientID: String?, reason: String, on connection: Connection) throws
        -> [UInt64]
    {
        let ids: [UInt64] = try connection.query(
            """
            SELECT id FROM sessions
            WHERE user_id = ? AND (? IS NULL OR apple_client_id = ? OR apple_client_id IS NULL) AND revoked_at IS NULL
            ORDER BY id FOR UPDATE
            """, userID, clientID, clientID
        ).map { try $0.decode(column: "id") }
        guard !ids.isEmpty else { return [] }
        _ = try connection.execute(
            """
            UPDATE sessions SET revoked_at = UTC_TIMESTAMP(3), revoke_reason = \(reason), expires_at = LEAST(expires_at, UTC_TIMESTAMP(3))
            WHERE id IN (\(list: ids))
            """)
        try SessionRevocations.record(userID: userID, sessionID: nil, on: connection)
        return ids
    }
}
