-- Sign-ins of native apps through the browser (RFC 8252: the system browser, a redirect to the
-- app's registered URI with a one-time code, the code exchanged with its PKCE verifier at
-- POST /auth/token). They go through Apple and the callback as a web sign-in does, in the same
-- row; these columns say which app asked and hold its code, whose SHA-256 only is stored. Web
-- sign-ins leave them NULL, so a siwa that predates them keeps working during an upgrade.
ALTER TABLE web_sign_ins
    ADD COLUMN IF NOT EXISTS app_client_id VARCHAR(64) NULL,
    ADD COLUMN IF NOT EXISTS app_redirect_uri VARCHAR(2048) NULL,
    ADD COLUMN IF NOT EXISTS app_state VARCHAR(512) NULL,
    -- The S256 code challenge, decoded.
    ADD COLUMN IF NOT EXISTS code_challenge BINARY(32) NULL,
    ADD COLUMN IF NOT EXISTS code_hash BINARY(32) NULL,
    ADD COLUMN IF NOT EXISTS code_expires_at DATETIME(3) NULL,
    ADD COLUMN IF NOT EXISTS code_used_at DATETIME(3) NULL,
    ADD UNIQUE KEY IF NOT EXISTS web_sign_ins_code (code_hash);
