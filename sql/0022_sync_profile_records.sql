-- Each user's built-in profile as the one record (key '') of the collection `profile` (see 0020), at
-- the version that last changed it; a user whose profile was never synced has none (a sync shows
-- the empty profile for it, as before).
-- batched: users.id 5000
INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT id, 'profile', '',
    CONCAT('{"totalXp":', total_xp, ',"currentLevel":', current_level, ',"streakDays":', streak_days, ',"lastActiveDate":',
        IFNULL(CONCAT('"', DATE_FORMAT(last_active_date, '%Y-%m-%d'), '"'), 'null'), '}'),
    0, NULL, profile_version, UTC_TIMESTAMP(3)
FROM users
WHERE @siwa_batch_from <= id AND id < @siwa_batch_to
    AND (profile_version > 0 OR total_xp > 0 OR current_level > 0 OR streak_days > 0 OR last_active_date IS NOT NULL)
ON DUPLICATE KEY UPDATE sync_records.user_id = sync_records.user_id;
