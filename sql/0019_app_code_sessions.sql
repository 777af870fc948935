-- The session an app's one-time code opened (POST /auth/token), so that the code presented again
-- revokes it (RFC 6749 §4.1.2: a code used twice may have been stolen). NULL until the code opened
-- one, and for web sign-ins; a siwa that predates it keeps working during an upgrade.
ALTER TABLE web_sign_ins ADD COLUMN IF NOT EXISTS code_session_id BIGINT UNSIGNED NULL;
