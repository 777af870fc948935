-- The highest version of a tombstone purged: a device whose cursor is older missed a deletion the
-- server no longer keeps, and is told to sync everything again. A purge also moves sync_version on,
-- so that servers' cached states of the user are read again.
ALTER TABLE users ADD COLUMN IF NOT EXISTS sync_purged_version BIGINT UNSIGNED NOT NULL DEFAULT 0;
