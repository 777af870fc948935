package import MariaDB

/// Stored records of declared collections, and the tombstones of deleted ones: kept so that every device learns of the
/// deletion, and purged once their collection's `tombstoneDays` have passed.
///
/// A purge moves the user's `sync_purged_version` up to the versions it purged: a device whose
/// cursor is older missed a deletion the server no longer holds, and is told to sync everything
/// again (`resync`). It also moves the user's `sync_version` on, so that a server's cached state of
/// the user is read again. Each user's tombstones go in a transaction of their own that locks the
/// user's row first, as a sync does (the background jobs run them: `BackgroundJobs`).
package enum SyncRecords {
    /// The collections the database holds records of (`siwa doctor`): read from the tombstones'
    /// index one entry per collection (a loose index scan), not counted, which would read every record.
    package static func storedCollections(on connection: Connection) throws -> [String] {
        try connection.query("SELECT collection FROM sync_records GROUP BY collection ORDER BY collection").map {
            try $0.decode(column: "collection")
        }
    }

    /// Up to `limit` tombstones of `collection` written more than `days` ago, by user, in order of
    /// user id (the order in which their rows are locked).
    package static func tombstones(of collection: String, olderThanDays days: Int, limit: Int, on connection: Connection) throws
        -> [(userID: UInt64, tombstones: [(key: [UInt8], version: UInt64)])]
    {
        let rows = try connection.query(
            """
            SELECT user_id, item_key, version FROM sync_records
            WHERE collection = ? AND deleted_at < UTC_TIMESTAMP(3) - INTERVAL ? DAY LIMIT ?
            """, collection, days, Int64(limit))
        var byUser: [UInt64: [(key: [UInt8], version: UInt64)]] = [:]
        for row in rows {
            byUser[try row.decode(column: "user_id"), default: []].append(
                (try row.decode(column: "item_key"), try row.decode(column: "version")))
        }
        return byUser.sorted(by: { $0.key < $1.key }).map { (userID: $0.key, tombstones: $0.value) }
    }

    /// Purges `tombstones` of `userID`'s `collection` (from `tombstones(of:olderThanDays:limit:on:)`),
    /// locking the user's row first, as a sync does; call it in a transaction of its own.
    /// - Returns: how many were purged: 0 when the user is gone or every tombstone was written again.
    package static func purge(
        _ tombstones: [(key: [UInt8], version: UInt64)], of userID: UInt64, collection: String, on connection: Connection
    ) throws -> UInt64 {
        guard !(try connection.query("SELECT id FROM users WHERE id = ? FOR UPDATE", userID).isEmpty) else { return 0 }
        // A tombstone written again since (its version moved) waits for its own time.
        let deleted = try connection.executeBatch(
            "DELETE FROM sync_records WHERE user_id = ? AND collection = ? AND item_key = ? AND deleted = 1 AND version = ?",
            rows: tombstones.map { [userID, collection, $0.key, $0.version] }
        ).affectedRows
        guard deleted > 0 else { return 0 }
        _ = try connection.execute(
            """
            UPDATE users SET sync_purged_version = GREATEST(sync_purged_version, ?), sync_version = sync_version + 1
            WHERE id = ?
            """, tombstones.map(\.version).max()!, userID)
        return deleted
    }
}
