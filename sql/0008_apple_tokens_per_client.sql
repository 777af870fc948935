-- Apple's refresh tokens, one per (identity, client id): a person who signs in with the app (a
-- bundle id) and on the web (the Services ID) holds two tokens, each validated and revoked with the
-- client id that minted it. Each session records the client id it was opened with, so that Apple
-- refusing one token ends only the sessions that depend on it.
--
-- MariaDB commits each DDL statement on its own, so a run can stop half way: every statement but
-- the last may run again, and the last drops the old columns in one statement. Running the file
-- again finishes a stopped run.

-- NULL for sessions opened before this migration: Apple refusing any of the user's tokens ends them.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS apple_client_id VARCHAR(255) NULL AFTER device;

CREATE TABLE IF NOT EXISTS apple_tokens (
    identity_id BIGINT UNSIGNED NOT NULL,
    client_id VARCHAR(255) NOT NULL,
    -- Encrypted (AES-256-GCM) with the data key `token_key_id`.
    token VARBINARY(1024) NOT NULL,
    token_key_id VARCHAR(32) NOT NULL,
    last_validated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    next_validation_at DATETIME(3) NOT NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    PRIMARY KEY (identity_id, client_id),
    KEY apple_tokens_validation (next_validation_at),
    CONSTRAINT apple_tokens_identity_fk FOREIGN KEY (identity_id) REFERENCES apple_identities (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO apple_tokens (identity_id, client_id, token, token_key_id, last_validated_at, next_validation_at)
SELECT id, apple_refresh_token_client_id, apple_refresh_token, apple_refresh_token_key_id,
    COALESCE(last_validated_at, UTC_TIMESTAMP(3)), COALESCE(next_validation_at, UTC_TIMESTAMP(3))
FROM apple_identities
WHERE apple_refresh_token IS NOT NULL AND apple_refresh_token_key_id IS NOT NULL AND apple_refresh_token_client_id IS NOT NULL
    AND consent_state = 'active';

ALTER TABLE apple_identities
    DROP INDEX IF EXISTS apple_identities_validation,
    DROP COLUMN IF EXISTS apple_refresh_token,
    DROP COLUMN IF EXISTS apple_refresh_token_key_id,
    DROP COLUMN IF EXISTS apple_refresh_token_client_id,
    DROP COLUMN IF EXISTS last_validated_at,
    DROP COLUMN IF EXISTS next_validation_at;
