-- Security-relevant events (sign-in, refresh-token reuse, deletion, Apple notifications).
-- Holds no token, code, nonce or full email: only ids, a type and a small JSON detail.
CREATE TABLE IF NOT EXISTS audit_events (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    occurred_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    event_type VARCHAR(64) NOT NULL,
    user_id BIGINT UNSIGNED NULL,
    session_id BIGINT UNSIGNED NULL,
    remote_address VARCHAR(45) NULL,
    detail JSON NULL,
    KEY audit_events_user (user_id, occurred_at),
    KEY audit_events_type (event_type, occurred_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
