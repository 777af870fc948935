-- Progress and achievements synced across a user's devices. Every change a sync makes carries the
-- user's next change version (users.sync_version + 1); a device's cursor is the version it has
-- seen, so "what changed since" is `version > cursor`. Client times (completed_at) are Unix
-- milliseconds as the devices send them; server times are UTC DATETIME(3).
ALTER TABLE users
    ADD COLUMN IF NOT EXISTS total_xp BIGINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS current_level INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS streak_days INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_active_date DATE NULL,
    ADD COLUMN IF NOT EXISTS profile_version BIGINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS sync_version BIGINT UNSIGNED NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS progress (
    user_id BIGINT UNSIGNED NOT NULL,
    belief_system_id VARCHAR(128) NOT NULL,
    lesson_id VARCHAR(128) NOT NULL,
    -- 0 not_started, 1 in_progress, 2 completed: a number, so the merge can take the maximum.
    status TINYINT UNSIGNED NOT NULL,
    score INT UNSIGNED NOT NULL,
    earned_xp INT UNSIGNED NOT NULL,
    completed_at BIGINT NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    version BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (user_id, belief_system_id, lesson_id),
    KEY progress_changes (user_id, version),
    CONSTRAINT progress_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

CREATE TABLE IF NOT EXISTS user_achievements (
    user_id BIGINT UNSIGNED NOT NULL,
    achievement_id VARCHAR(128) NOT NULL,
    progress INT UNSIGNED NOT NULL,
    completed TINYINT(1) NOT NULL,
    completed_at BIGINT NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    version BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (user_id, achievement_id),
    KEY user_achievements_changes (user_id, version),
    CONSTRAINT user_achievements_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
