-- Operators disable a user (`siwa admin disable`): while disabled_at is set, sign-in is refused
-- (403 user_disabled) and the user has no active session; nothing of theirs is deleted.
ALTER TABLE users
    ADD COLUMN IF NOT EXISTS disabled_at DATETIME(3) NULL,
    ADD COLUMN IF NOT EXISTS disabled_reason VARCHAR(255) NULL;

-- Apple's real_user_status of the latest sign-in with this identity: 0 unsupported, 1 unknown,
-- 2 likely real; NULL when the token did not say (web sign-ins, older devices).
ALTER TABLE apple_identities
    ADD COLUMN IF NOT EXISTS real_user_status TINYINT UNSIGNED NULL;
