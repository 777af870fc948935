-- One sync engine: the built-in lessons, achievements and profile are records of sync_records, in
-- the collections `progress`, `achievements` and `profile` of the built-in declaration, each row's
-- body the JSON the record codec writes (members in the declaration's order, no spaces, a missing
-- time as null) and its key the codec's (two ids joined by U+001F). 0020 copies the lessons, 0021
-- the achievements, 0022 the profiles; each keeps the row's version and time. A row copied already
-- (a run stopped and started again) is left as it is. Each copies in batches of 5,000 rows, each
-- committed on its own (siwa migrate), so that no transaction holds a whole table's rows. The old tables and columns stay, unread and
-- unwritten, until a later release drops them.
-- batched: progress.user_id 5000
INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT user_id, 'progress', CONCAT(belief_system_id, CHAR(31), lesson_id),
    CONCAT('{"beliefSystemId":"', belief_system_id, '","lessonId":"', lesson_id, '","status":"',
        IFNULL(ELT(status + 1, 'not_started', 'in_progress', 'completed'), 'not_started'), '","score":', score,
        ',"earnedXp":', earned_xp, ',"completedAt":', IFNULL(completed_at, 'null'), '}'),
    0, NULL, version, updated_at
FROM progress
WHERE @siwa_batch_from <= user_id AND user_id < @siwa_batch_to
ON DUPLICATE KEY UPDATE sync_records.user_id = sync_records.user_id;
