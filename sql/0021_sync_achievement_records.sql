-- The built-in achievements as records of the collection `achievements` (see 0020).
-- batched: user_achievements.user_id 5000
INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT user_id, 'achievements', achievement_id,
    CONCAT('{"achievementId":"', achievement_id, '","progress":', progress, ',"completed":', IF(completed, 'true', 'false'),
        ',"completedAt":', IFNULL(completed_at, 'null'), '}'),
    0, NULL, version, updated_at
FROM user_achievements
WHERE @siwa_batch_from <= user_id AND user_id < @siwa_batch_to
ON DUPLICATE KEY UPDATE sync_records.user_id = sync_records.user_id;
