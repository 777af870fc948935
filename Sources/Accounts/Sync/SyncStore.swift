package import AccountData
package import MariaDB
import StrictJSON
import SyncRules

/// The statements of sync and the mapping of its rows: the user's state read (`read`), the user's
/// version moved on (which locks the user's row), the upserts of a sync's merged rows, alone or for
/// a batch of users. What to read, merge and write, and when, is the sync engine's (`SyncEngine`,
/// in `Identity`).
package enum SyncStore {
    /// `read` without locks, its statements in one transaction: one snapshot of the user's row and
    /// items, so that every item of the version read is there (a page's cursor can stop inside a
    /// version, and a torn read would skip the rest of it).
    package static func readConsistent(userID: UInt64, session: UInt64?, collections: DeclaredCollections, on connection: Connection) throws
        -> SyncStoredState?
    {
        try connection.transaction { try read(userID: userID, session: session, lock: false, collections: collections, on: connection) }
    }

    /// The user's version as stored now; nil when the user is gone or `session` is not active.
    package static func currentVersion(of userID: UInt64, session: UInt64?, on connection: Connection) throws -> UInt64? {
        // With a session, the user is only found while that session of theirs is active.
        let rows =
            if let session {
                try connection.query(
                    "SELECT u.sync_version FROM users u JOIN sessions s ON s.user_id = u.id WHERE u.id = ? AND s.id = ? AND \(Sessions.activeCondition)",
                    userID, session)
            } else {
                try connection.query("SELECT u.sync_version FROM users u WHERE u.id = ?", userID)
            }
        return try rows.first?.decode(column: "sync_version")
    }

    /// The user's whole synced state: every record of the sync's collections (the built-in ones and
    /// those declared); nil when the user is gone or `session` is not active.
    package static func read(
        userID: UInt64, session: UInt64?, lock: Bool, collections: DeclaredCollections = .none, on connection: Connection
    ) throws -> SyncStoredState? {
        // With a session, the user is only found while that session of theirs is active; locked,
        // both rows are held until the transaction ends.
        let columns: SQL = "u.sync_version, u.sync_purged_version, u.guest_since IS NOT NULL AS guest"
        let lockClause: SQL = lock ? "FOR UPDATE" : ""
        let users =
            if let session {
                try connection.query(
                    """
                    SELECT \(columns) FROM users u JOIN sessions s ON s.user_id = u.id
                    WHERE u.id = \(userID) AND s.id = \(session) AND \(Sessions.activeCondition) \(lockClause)
                    """)
            } else {
                try connection.query("SELECT \(columns) FROM users u WHERE u.id = \(userID) \(lockClause)")
            }
        guard let user = users.first else { return nil }
        let wire = collections.wire
        var records = [[String: SyncVersioned<SyncRecord>]](repeating: [:], count: wire.codecs.count)
        var storedBytes = 0
        for row in try connection.query("SELECT collection, body, version FROM sync_records WHERE user_id = \(userID)") {
            // Rows of a collection no longer declared stay stored, unsynced.
            guard let index = wire.index(of: try row.decode(column: "collection")) else { continue }
            let body: [UInt8] = try row.decode(column: "body")
            var reader = JSONReader(body, limits: .tokens)
            guard case .success(let record) = try wire.codecs[index].read(&reader, path: "", checked: false) else { continue }
            records[index][record.key] = SyncVersioned(item: record, version: try row.decode(column: "version"), bytes: body.count)
            storedBytes += body.count
        }
        return SyncStoredState(
            version: try user.decode(column: "sync_version"), records: records,
            purgedVersion: try user.decode(column: "sync_purged_version"),
            storedBytes: storedBytes, guest: try user.decode(column: "guest"))
    }

    /// Moves the user's version on by one, if it is still `version`; false otherwise (another sync
    /// got in between, or the user is gone). The update locks the user's row until the transaction
    /// ends.
    package static func advance(userID: UInt64, from version: UInt64, on connection: Connection) throws -> Bool {
        try connection.execute(
            "UPDATE users SET sync_version = \(version + 1) WHERE id = \(userID) AND sync_version = \(version)"
        ).affectedRows == 1
    }

    /// The versions of `userIDs` (sorted, so that batches lock in one order), locked until the
    /// transaction ends; users that are gone are missing.
    package static func lockVersions(of userIDs: [UInt64], on connection: Connection) throws -> [UInt64: UInt64] {
        var versions: [UInt64: UInt64] = [:]
        for chunk in SQL.chunks(userIDs) {
            for row in try connection.query("SELECT id, sync_version FROM users WHERE id IN (\(list: chunk)) FOR UPDATE") {
                versions[try row.decode(column: "id")] = try row.decode(column: "sync_version")
            }
        }
        return versions
    }

    /// Moves the versions of `userIDs` on by one; their rows must be locked by this transaction.
    package static func advance(_ userIDs: [UInt64], on connection: Connection) throws {
        for chunk in SQL.chunks(userIDs) {
            _ = try connection.execute("UPDATE users SET sync_version = sync_version + 1 WHERE id IN (\(list: chunk))")
        }
    }

    /// Some user of a batch moved on, or some session of it is not active (`advanceAllCurrent`).
    package struct NotAllCurrent: Error {}

    /// Moves on the version of each user (one entry per user) and locks their rows, if each is still
    /// at `version` and its `session` (when given) is active.
    ///
    /// Two statements of one table each, whose cost grows in step with the batch (MariaDB's CPU: about
    /// 0.35 ms for 16 users, 1 ms for 64). One `UPDATE` of the users joined with their sessions, over
    /// a list of (user, version, session) rows, did both, but its cost grew with the square of the
    /// batch: 1.0–1.6 ms for 16 users, 13–17 ms for 64, more than the rest of the batch.
    /// - Throws: `NotAllCurrent` when some user or session does not hold; the transaction must be
    ///   rolled back.
    package static func advanceAllCurrent(_ users: [(userID: UInt64, version: UInt64, session: UInt64?)], on connection: Connection)
        throws
    {
        // Users first, so their rows are locked in id order, as every batch locks them. The list of
        // ids besides the tuples: MariaDB turns a list of one tuple into a row comparison, which
        // the UPDATE's range optimizer does not use, and the batch of one user (the most common)
        // scanned and locked every row of users (0.6-0.9 s a sync with a million users; found by
        // `scripts/bench scale`).
        var advanced: UInt64 = 0
        for chunk in SQL.chunks(users) {
            let tuples = chunk.map { user -> [any DatabaseValueConvertible] in [user.userID, user.version] }
            advanced += try connection.execute(
                """
                UPDATE users SET sync_version = sync_version + 1
                WHERE id IN (\(list: chunk.map(\.userID))) AND (id, sync_version) IN (\(tuples: tuples))
                """
            ).affectedRows
        }
        guard advanced == users.count else { throw NotAllCurrent() }
        let sessions = users.compactMap { user in user.session.map { Sessions.Pair(sessionID: $0, userID: user.userID) } }
        if !sessions.isEmpty, try !Set(sessions).isSubset(of: Sessions.active(sessions, on: connection)) { throw NotAllCurrent() }
    }

    /// Whether each of `sessions` is active (true for nil: no session to check), read with shared
    /// locks that keep them so (a revocation waits) until the transaction ends: one statement for up
    /// to 64 sessions, none without a session.
    package static func areActive(_ sessions: [(sessionID: UInt64, userID: UInt64)?], on connection: Connection) throws -> [Bool] {
        let pairs = sessions.map { $0.map { Sessions.Pair(sessionID: $0.sessionID, userID: $0.userID) } }
        let checked = pairs.compactMap { $0 }
        let active = checked.isEmpty ? [] : try Sessions.active(checked, on: connection)
        return pairs.map { $0.map(active.contains) != false }
    }

    /// Writes each merge as its user's at `version`, the version this transaction moved the user's
    /// row to (and locked it): one batch execution.
    package static func write(_ merges: [(userID: UInt64, version: UInt64, merge: SyncMerge)], on connection: Connection) throws {
        try write(merges.flatMap { write in write.merge.records.map { (write.userID, write.version, $0) } }, on: connection)
    }

    // MARK: - Records

    /// Upserts records, each with its user and the version that changed it: one batch execution.
    static func write(_ records: [(userID: UInt64, version: UInt64, record: SyncMergedRecord)], on connection: Connection) throws {
        guard !records.isEmpty else { return }
        _ = try connection.executeBatch(
            """
            INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version)
            VALUES (?, ?, ?, ?, ?, IF(? = 1, UTC_TIMESTAMP(3), NULL), ?)
            ON DUPLICATE KEY UPDATE body = VALUES(body), deleted_at = IF(VALUES(deleted) = 1, IFNULL(deleted_at, UTC_TIMESTAMP(3)), NULL),
                deleted = VALUES(deleted), version = VALUES(version), updated_at = UTC_TIMESTAMP(3)
            """,
            rows: records.map { row in
                let deleted = row.record.record.isDeleted
                return [row.userID, row.record.name, row.record.record.key, row.record.json, deleted, deleted, row.version]
            })
    }
}
