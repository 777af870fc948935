-- Apple's server-to-server notifications, one row per `jti`: each is handled once. The user is
-- recorded only as the SHA-256 of Apple's `sub`, so the row outlives a deleted account without
-- keeping its identifier.
CREATE TABLE IF NOT EXISTS apple_notifications (
    jti VARCHAR(255) NOT NULL PRIMARY KEY,
    event_type VARCHAR(64) NOT NULL,
    sub_hash BINARY(32) NOT NULL,
    audience VARCHAR(255) NOT NULL,
    event_time DATETIME(3) NULL,
    received_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    processed_at DATETIME(3) NULL,
    -- processed, unknown_user, ignored
    outcome VARCHAR(32) NOT NULL,
    KEY apple_notifications_received (received_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
