-- The refresh token a session rotated away from last, and when: presented again within the reuse
-- interval (a retry whose answer was lost), it gets a new pair for the same session instead of
-- ending it as reuse.
ALTER TABLE sessions
    ADD COLUMN IF NOT EXISTS previous_token_hash BINARY(32) NULL,
    ADD COLUMN IF NOT EXISTS rotated_at DATETIME(3) NULL;
