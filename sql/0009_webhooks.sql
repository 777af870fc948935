-- Lifecycle webhooks: an outbox of events for the app's own backend, written in the transaction of
-- the change each one reports, and one delivery per configured endpoint, sent by `siwa jobs`.
--
-- No foreign key to users: a `user.deleted` event outlives its user.
CREATE TABLE IF NOT EXISTS webhook_events (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    -- The event id receivers deduplicate on: evt_ and 32 hex digits.
    public_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    event_type VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    user_id BIGINT UNSIGNED NOT NULL,
    -- The JSON body exactly as it is sent (and signed) on every attempt.
    body TEXT NOT NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    UNIQUE KEY webhook_events_public_id (public_id),
    KEY webhook_events_user (user_id, id),
    KEY webhook_events_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per (event, endpoint). Events of one user go to one endpoint in order: a delivery waits
-- while an earlier one of the same user to the same endpoint is pending.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    event_id BIGINT UNSIGNED NOT NULL,
    endpoint VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    user_id BIGINT UNSIGNED NOT NULL,
    state ENUM('pending', 'delivered', 'failed') NOT NULL DEFAULT 'pending',
    attempts INT UNSIGNED NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    -- Since when it has been pending (reset by a redelivery): it is given up after the retry window.
    pending_since DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    last_status SMALLINT UNSIGNED NULL,
    last_error VARCHAR(255) NULL,
    delivered_at DATETIME(3) NULL,
    PRIMARY KEY (event_id, endpoint),
    KEY webhook_deliveries_due (state, next_attempt_at),
    KEY webhook_deliveries_order (endpoint, user_id, state, event_id),
    CONSTRAINT webhook_deliveries_event_fk FOREIGN KEY (event_id) REFERENCES webhook_events (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The delivery log: every attempt, with the endpoint's status or the error.
CREATE TABLE IF NOT EXISTS webhook_attempts (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    event_id BIGINT UNSIGNED NOT NULL,
    endpoint VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempted_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    status SMALLINT UNSIGNED NULL,
    error VARCHAR(255) NULL,
    duration_ms INT UNSIGNED NOT NULL,
    KEY webhook_attempts_event (event_id, id),
    KEY webhook_attempts_time (attempted_at),
    CONSTRAINT webhook_attempts_event_fk FOREIGN KEY (event_id) REFERENCES webhook_events (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
