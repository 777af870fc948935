-- Guest accounts (`POST /auth/guest`): a user without an Apple identity has `guest_since` set until
-- a sign-in with Apple attaches one; `siwa jobs` purges guests unused for a while.
-- External ids: the id a user has in the app's older backend, set when a link token attaches an
-- Apple identity to that user (compared byte for byte, unique).
ALTER TABLE users
    ADD COLUMN IF NOT EXISTS guest_since DATETIME(3) NULL,
    ADD COLUMN IF NOT EXISTS external_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    ADD UNIQUE KEY IF NOT EXISTS users_external_id (external_id),
    ADD KEY IF NOT EXISTS users_guests (guest_since);
