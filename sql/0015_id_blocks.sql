-- Ids of new users and sessions are handed out by siwa from blocks it reserves here
-- (Sources/Accounts/IDBlocks.swift), so that a transaction knows a new row's id before the row is
-- written and can send every insert of a sign-in with its COMMIT. Every insert into `users` and
-- `sessions` takes its id from a block; their AUTO_INCREMENT is no longer used. Each table's row
-- starts above its highest id (and each reservation checks that again).
CREATE TABLE IF NOT EXISTS id_blocks (
    table_name VARCHAR(64) NOT NULL PRIMARY KEY,
    -- The first id not yet reserved.
    next_id BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB
SELECT 'users' AS table_name, COALESCE(MAX(id), 0) + 1 AS next_id FROM users
UNION ALL SELECT 'sessions', COALESCE(MAX(id), 0) + 1 FROM sessions;
