-- Users and what belongs to them: Apple identities, email addresses, sessions with their refresh
-- tokens, spent nonces, web sign-in state, and the outbox of revocations to send to Apple.
-- Secrets are never stored in the clear: refresh tokens, nonces, states and handles as SHA-256,
-- Apple's refresh token encrypted (AES-256-GCM, with the id of the data key).
-- Times are UTC in DATETIME(3) columns (no 2038 limit), set with UTC_TIMESTAMP(3).

CREATE TABLE IF NOT EXISTS users (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    first_name VARCHAR(100) NULL,
    last_name VARCHAR(100) NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per (team, Apple sub): the only way to find a user from Apple (never by email).
CREATE TABLE IF NOT EXISTS apple_identities (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id BIGINT UNSIGNED NOT NULL,
    team_id VARCHAR(16) NOT NULL,
    sub VARCHAR(255) NOT NULL,
    -- The client id (bundle id or Services ID) of the latest sign-in.
    audience VARCHAR(255) NOT NULL,
    -- Apple's refresh token, encrypted, and the client id that minted it (used to validate and revoke).
    apple_refresh_token VARBINARY(1024) NULL,
    apple_refresh_token_key_id VARCHAR(32) NULL,
    apple_refresh_token_client_id VARCHAR(255) NULL,
    consent_state ENUM('active', 'revoked') NOT NULL DEFAULT 'active',
    transfer_sub VARCHAR(255) NULL,
    last_validated_at DATETIME(3) NULL,
    next_validation_at DATETIME(3) NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    UNIQUE KEY apple_identities_team_sub (team_id, sub),
    KEY apple_identities_user (user_id),
    KEY apple_identities_validation (next_validation_at),
    CONSTRAINT apple_identities_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS user_emails (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id BIGINT UNSIGNED NOT NULL,
    address VARCHAR(320) NOT NULL,
    is_private_relay TINYINT(1) NOT NULL,
    forwarding_enabled TINYINT(1) NOT NULL DEFAULT 1,
    verified TINYINT(1) NOT NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    UNIQUE KEY user_emails_user_address (user_id, address),
    KEY user_emails_address (address),
    CONSTRAINT user_emails_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One session per device; its refresh tokens rotate within it (the token family).
CREATE TABLE IF NOT EXISTS sessions (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id BIGINT UNSIGNED NOT NULL,
    device VARCHAR(128) NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    last_used_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    expires_at DATETIME(3) NOT NULL,
    revoked_at DATETIME(3) NULL,
    revoke_reason VARCHAR(32) NULL,
    KEY sessions_user (user_id, revoked_at),
    CONSTRAINT sessions_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every refresh token a session was given, as SHA-256; spent ones stay to detect reuse.
CREATE TABLE IF NOT EXISTS refresh_tokens (
    token_hash BINARY(32) NOT NULL PRIMARY KEY,
    session_id BIGINT UNSIGNED NOT NULL,
    issued_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    spent_at DATETIME(3) NULL,
    KEY refresh_tokens_session (session_id),
    CONSTRAINT refresh_tokens_session_fk FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Nonces already accepted (SHA-256 of the raw nonce), kept until the token they came with expires.
CREATE TABLE IF NOT EXISTS used_nonces (
    nonce_hash BINARY(32) NOT NULL PRIMARY KEY,
    expires_at DATETIME(3) NOT NULL,
    KEY used_nonces_expiry (expires_at)
) ENGINE=InnoDB;

-- The web flow: state and nonce kept server side, bound to the browser; then the verified result
-- under a one-time handle.
CREATE TABLE IF NOT EXISTS web_sign_ins (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    state_hash BINARY(32) NOT NULL,
    binding_hash BINARY(32) NOT NULL,
    nonce VARCHAR(128) NOT NULL,
    return_to VARCHAR(512) NOT NULL,
    expires_at DATETIME(3) NOT NULL,
    handle_hash BINARY(32) NULL,
    user_id BIGINT UNSIGNED NULL,
    is_new_user TINYINT(1) NOT NULL DEFAULT 0,
    error VARCHAR(64) NULL,
    completed_at DATETIME(3) NULL,
    consumed_at DATETIME(3) NULL,
    UNIQUE KEY web_sign_ins_state (state_hash),
    UNIQUE KEY web_sign_ins_handle (handle_hash),
    KEY web_sign_ins_expiry (expires_at),
    CONSTRAINT web_sign_ins_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Revocations to send to Apple, retried until Apple answers 200. No link to the user, who is gone.
CREATE TABLE IF NOT EXISTS apple_revocations (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    client_id VARCHAR(255) NOT NULL,
    token VARBINARY(1024) NOT NULL,
    token_key_id VARCHAR(32) NOT NULL,
    token_type_hint VARCHAR(16) NOT NULL,
    created_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    attempts INT UNSIGNED NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    last_error VARCHAR(255) NULL,
    done_at DATETIME(3) NULL,
    KEY apple_revocations_due (done_at, next_attempt_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
