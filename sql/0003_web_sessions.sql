-- Web sessions are authenticated by an HttpOnly cookie; like refresh tokens, only its SHA-256 is
-- stored. Native sessions leave it NULL.
ALTER TABLE sessions
    ADD COLUMN IF NOT EXISTS cookie_hash BINARY(32) NULL AFTER device,
    ADD UNIQUE KEY IF NOT EXISTS sessions_cookie (cookie_hash);
