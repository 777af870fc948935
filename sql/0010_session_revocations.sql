-- Every session revocation, written in the transaction that ends the session(s): each siwa process
-- polls the recent rows to drop the sessions it remembers as active, so that a session ended by
-- another process or host (`siwa jobs`, `siwa users`, another siwa) is refused there too within
-- the poll interval. A NULL session_id stands for every session of the user. Rows are purged after
-- an hour by `siwa jobs`.
CREATE TABLE IF NOT EXISTS session_revocations (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id BIGINT UNSIGNED NOT NULL,
    session_id BIGINT UNSIGNED NULL,
    revoked_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    KEY session_revocations_time (revoked_at)
) ENGINE=InnoDB;
