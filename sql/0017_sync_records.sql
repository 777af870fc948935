-- Records of the collections an app declares (SIWA_SYNC_COLLECTIONS), merged by the rules of their
-- declaration. A record is kept as the JSON a device gets (its key, every field, a latest-wins
-- `deleted`), under its key (a one-field key's value; several ids, dates and integers joined by U+001F; else a JSON array). Its version is the user's sync_version that last
-- changed it, as for progress; deleted marks a tombstone, which the background jobs purge after the
-- collection's tombstoneDays, counted from deleted_at. The built-in lessons, achievements and profile
-- keep their own tables.
--
-- The purge finds tombstones by (collection, deleted_at), which stays NULL while a record lives:
-- rewriting a live record leaves that index alone. (An index on updated_at, which every write
-- changes, cost each changed record an index entry to delete and insert: a third more of MariaDB's
-- work per changing sync in the sync benchmark.)
CREATE TABLE IF NOT EXISTS sync_records (
    user_id BIGINT UNSIGNED NOT NULL,
    collection VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    item_key VARBINARY(1200) NOT NULL,
    body MEDIUMBLOB NOT NULL,
    deleted TINYINT(1) NOT NULL DEFAULT 0,
    -- When the record was deleted; NULL while it lives.
    deleted_at DATETIME(3) NULL,
    version BIGINT UNSIGNED NOT NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    PRIMARY KEY (user_id, collection, item_key),
    KEY sync_records_tombstones (collection, deleted_at),
    CONSTRAINT sync_records_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB;
