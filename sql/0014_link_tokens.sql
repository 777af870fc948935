-- Link tokens: minted for the app's older backend (`POST /internal/link-tokens`) for one of its
-- user ids; the app presents one with a sign-in to attach the Apple identity to that user. Stored
-- as SHA-256, single use, short-lived; purged by `siwa jobs` a day after they expire.
CREATE TABLE IF NOT EXISTS link_tokens (
    token_hash BINARY(32) NOT NULL PRIMARY KEY,
    external_id VARCHAR(255) NOT NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    expires_at DATETIME(3) NOT NULL,
    used_at DATETIME(3) NULL,
    used_by_user_id BIGINT UNSIGNED NULL,
    KEY link_tokens_expiry (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
