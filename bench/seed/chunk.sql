-- scripts/bench seed, step 2 of 3: the rows of the users @lo to @hi of seed_users (and of the
-- deleted ids among them), table by table. Every value is derived from the user id (CRC32 and
-- SHA-2 of it), so that two runs make the same database but for @now.
--
-- Shapes the server relies on, written as the server writes them:
--   * sessions: user u has the ids 4u (iPhone, native, com.example.siwa), 4u + 1 (web, cookie,
--     com.example.siwa.web; daily users) and 4u + 2 (an older iPhone session, signed out; active
--     users). A native session's live refresh token is base64url(SHA-256("siwa-seed-refresh|<id>"))
--     without padding (43 characters, as OpaqueToken makes them); refresh_tokens stores the
--     SHA-256 of that text, as the server does. scripts/bench-scale.sh derives the same tokens.
--   * apple_identities: the sub of the emulator's person "seed-<user id>" of team TEAMID0001
--     (AppleFormats.sub: SHA-256 of "sub|<team>|<person>"), so that `appleid-emulator mint
--     --user-ids` makes identity tokens of returning users.
--   * apple_tokens: bytes of a sealed token's size (98), not decryptable: nothing the benchmarks run
--     reads them; `siwa jobs` must not run on a seeded database (it would ask Apple, the emulator,
--     about tokens it never issued).
--   * sync_records: bodies as SyncRecordCodec writes them (keys, fields in declared order, then
--     `deleted` for collections with tombstones); versions 1..n per user, n = users.sync_version.
-- Two chunks run at once (BENCH_SEED_JOBS): read committed, so that neither locks the rows it
-- reads, and a long wait for the other's inserts rather than an error.
SET time_zone = '+00:00', foreign_key_checks = 0, unique_checks = 0, innodb_lock_wait_timeout = 3600,
    tx_isolation = 'READ-COMMITTED';

INSERT INTO users (id, first_name, last_name, created_at, updated_at, sync_version)
SELECT id, IF(MOD(CRC32(CONCAT(id, ':name')), 3) = 0, 'Seed', NULL), IF(MOD(CRC32(CONCAT(id, ':name')), 3) = 0, CONCAT('User ', id), NULL),
    created_at, last_seen, lessons + achievements + 1 + workouts + favourites
FROM seed_users WHERE id BETWEEN @lo AND @hi;

INSERT INTO user_emails (user_id, address, is_private_relay, verified, created_at, updated_at)
SELECT id, CONCAT('seed-', id, '@example.com'), 0, 1, created_at, created_at FROM seed_users WHERE id BETWEEN @lo AND @hi;

INSERT INTO apple_identities (id, user_id, team_id, sub, audience, consent_state, created_at, updated_at)
SELECT id, id, 'TEAMID0001',
    CONCAT(LPAD(MOD(CONV(SUBSTR(h, 1, 6), 16, 10), 1000000), 6, '0'), '.', SUBSTR(h, 7, 32), '.',
        LPAD(MOD(CONV(SUBSTR(h, 39, 4), 16, 10), 10000), 4, '0')),
    IF(x <= 0.01, 'com.example.siwa.web', 'com.example.siwa'), 'active', created_at, last_seen
FROM (SELECT id, x, created_at, last_seen, SHA2(CONCAT('sub|TEAMID0001|seed-', id), 256) AS h FROM seed_users WHERE id BETWEEN @lo AND @hi) u;

INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, last_validated_at, next_validation_at, created_at, updated_at)
SELECT id, client, UNHEX(CONCAT(SHA2(CONCAT('apple|', id, client), 512), SHA2(CONCAT('apple2|', id, client), 256), '0000')), 'k1',
    validated, validated + INTERVAL 1 DAY, created_at, validated
FROM (
    SELECT id, 'com.example.siwa' AS client, created_at, @now - INTERVAL MOD(CRC32(CONCAT(id, ':valid')), 86400) SECOND AS validated
    FROM seed_users WHERE id BETWEEN @lo AND @hi
    UNION ALL
    SELECT id, 'com.example.siwa.web', created_at, @now - INTERVAL MOD(CRC32(CONCAT(id, ':validw')), 86400) SECOND
    FROM seed_users WHERE id BETWEEN @lo AND @hi AND x <= 0.01
) t;

-- Sessions, as `siwa jobs` leaves them (sessions that ended more than 30 days ago purged, the
-- default SIWA_SESSION_RETENTION_DAYS): the iPhone session of every user whose session has not
-- ended that long ago (it expires 90 days after its last use), the web session of daily users, and
-- a session of a third of the active users signed out in the last 30 days (a revoked session's
-- expiry is its revocation).
INSERT INTO sessions (id, user_id, device, apple_client_id, cookie_hash, created_at, last_used_at, expires_at, revoked_at, revoke_reason,
    previous_token_hash, rotated_at)
SELECT 4 * id, id, 'iPhone', 'com.example.siwa', NULL, created_at, last_seen, last_seen + INTERVAL 90 DAY, NULL, NULL,
    IF(x <= 0.1, UNHEX(SHA2(REPLACE(REPLACE(TRIM(TRAILING '=' FROM TO_BASE64(UNHEX(SHA2(CONCAT('siwa-seed-refresh|', 4 * id, '|old1'), 256)))), '+', '-'), '/', '_'), 256)), NULL),
    IF(x <= 0.1, last_seen, NULL)
FROM seed_users WHERE id BETWEEN @lo AND @hi AND last_seen + INTERVAL 90 DAY > @now - INTERVAL 30 DAY;
INSERT INTO sessions (id, user_id, device, apple_client_id, cookie_hash, created_at, last_used_at, expires_at)
SELECT 4 * id + 1, id, 'Safari', 'com.example.siwa.web', UNHEX(SHA2(CONCAT('siwa-seed-cookie|', 4 * id + 1), 256)),
    GREATEST(created_at, @now - INTERVAL 20 DAY), last_seen, last_seen + INTERVAL 90 DAY
FROM seed_users WHERE id BETWEEN @lo AND @hi AND x <= 0.01;
INSERT INTO sessions (id, user_id, device, apple_client_id, created_at, last_used_at, expires_at, revoked_at, revoke_reason)
SELECT 4 * id + 2, id, 'iPad', 'com.example.siwa', GREATEST(created_at, ended - INTERVAL 10 DAY), ended, ended, ended, 'logout'
FROM (SELECT *, @now - INTERVAL MOD(CRC32(CONCAT(id, ':out')), 30 * 86400) SECOND AS ended FROM seed_users
    WHERE id BETWEEN @lo AND @hi AND x <= 0.1 AND MOD(id, 3) = 0) u
WHERE ended > created_at;

-- Refresh tokens: each native session's live one, and the two spent before it (in the last two
-- days of its use) of active users'.
INSERT INTO refresh_tokens (token_hash, session_id, issued_at, spent_at)
SELECT UNHEX(SHA2(REPLACE(REPLACE(TRIM(TRAILING '=' FROM TO_BASE64(UNHEX(SHA2(CONCAT('siwa-seed-refresh|', sid, salt), 256)))), '+', '-'), '/', '_'), 256)),
    sid, issued, spent
FROM (
    SELECT s.id AS sid, '' AS salt, s.last_used_at AS issued, NULL AS spent FROM sessions s
    WHERE s.user_id BETWEEN @lo AND @hi AND s.cookie_hash IS NULL
    UNION ALL
    SELECT 4 * id, CONCAT('|old', seq), last_seen - INTERVAL seq DAY, last_seen - INTERVAL seq - 1 DAY
    FROM seed_users JOIN seq_1_to_2 WHERE id BETWEEN @lo AND @hi AND x <= 0.1
) t;

-- Sync state: lessons and achievements (built in), the profile, and the workouts and favourites of
-- examples/sync/collections.json, of which one workout in 20 and one favourite in 10 are
-- tombstones deleted in the last 30 days.
INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT u.id, 'progress', CONCAT('bench', CHAR(31), 'l', s.seq),
    CONCAT('{"beliefSystemId":"bench","lessonId":"l', s.seq, '","status":"', IF(s.seq < u.lessons, 'completed', 'in_progress'),
        '","score":', MOD(u.id * 31 + s.seq * 17, 101), ',"earnedXp":', 5 + MOD(s.seq, 20), ',"completedAt":',
        IF(s.seq < u.lessons, FLOOR(UNIX_TIMESTAMP(u.created_at) * 1000) + s.seq * 600000, 'null'), '}'),
    0, NULL, s.seq, u.last_seen
FROM seed_users u JOIN seq_1_to_1000 s ON s.seq <= u.lessons WHERE u.id BETWEEN @lo AND @hi;

INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT u.id, 'achievements', CONCAT('a', s.seq),
    CONCAT('{"achievementId":"a', s.seq, '","progress":', 1 + MOD(u.id + s.seq, 10), ',"completed":', IF(MOD(s.seq, 3) = 0, 'true', 'false'),
        ',"completedAt":', IF(MOD(s.seq, 3) = 0, FLOOR(UNIX_TIMESTAMP(u.created_at) * 1000) + s.seq * 900000, 'null'), '}'),
    0, NULL, u.lessons + s.seq, u.last_seen
FROM seed_users u JOIN seq_1_to_100 s ON s.seq <= u.achievements WHERE u.id BETWEEN @lo AND @hi;

INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT id, 'profile', '',
    CONCAT('{"totalXp":', lessons * 12, ',"currentLevel":', FLOOR(lessons / 10), ',"streakDays":', IF(x <= 0.01, MOD(id, 60), 0),
        ',"lastActiveDate":"', DATE_FORMAT(last_seen, '%Y-%m-%d'), '"}'),
    0, NULL, lessons + achievements + 1, last_seen
FROM seed_users WHERE id BETWEEN @lo AND @hi;

INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT u.id, 'workouts', CONCAT('w', s.seq),
    CONCAT('{"workoutId":"w', s.seq, '","note":{"value":"', ELT(1 + MOD(s.seq, 4), 'easy run', 'intervals, felt strong', 'long ride by the river', 'recovery'),
        '","at":', ms, ',"device":"phone"},"distance":', 1000 + MOD(u.id * 7 + s.seq * 131, 20000), ',"laps":{"phone":', MOD(s.seq, 12),
        IF(MOD(s.seq, 4) = 0, CONCAT(',"watch":', MOD(s.seq, 5)), ''), '},"startedAt":', ms - 3600000,
        ',"effort":"done","tags":["', ELT(1 + MOD(s.seq, 3), 'run', 'ride', 'swim'), '"],"shared":', IF(MOD(s.seq, 7) = 0, 'true', 'false'),
        ',"deleted":', IF(MOD(u.id + s.seq, 20) = 0, CONCAT('{"value":true,"at":', ms + 86400000, ',"device":"phone"}'), 'null'), '}'),
    MOD(u.id + s.seq, 20) = 0, IF(MOD(u.id + s.seq, 20) = 0, @now - INTERVAL MOD(u.id + s.seq, 30) DAY, NULL),
    u.lessons + u.achievements + 1 + s.seq, u.last_seen
FROM (SELECT *, FLOOR(UNIX_TIMESTAMP(created_at) * 1000) AS ms FROM seed_users WHERE id BETWEEN @lo AND @hi AND workouts > 0) u
JOIN seq_1_to_300 s ON s.seq <= u.workouts;

INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version, updated_at)
SELECT u.id, 'favourites', CONCAT('f', s.seq),
    CONCAT('{"itemId":"f', s.seq, '","addedAt":', ms + s.seq * 60000, ',"label":{"value":"', ELT(1 + MOD(s.seq, 3), 'Morning', 'Hills', 'Track day'),
        '","at":', ms + s.seq * 60000, ',"device":"phone"},"deleted":',
        IF(MOD(u.id + s.seq, 10) = 0, CONCAT('{"value":true,"at":', ms + s.seq * 60000 + 1000, ',"device":"phone"}'), 'null'), '}'),
    MOD(u.id + s.seq, 10) = 0, IF(MOD(u.id + s.seq, 10) = 0, @now - INTERVAL MOD(u.id + s.seq, 30) DAY, NULL),
    u.lessons + u.achievements + 1 + u.workouts + s.seq, u.last_seen
FROM (SELECT *, FLOOR(UNIX_TIMESTAMP(created_at) * 1000) AS ms FROM seed_users WHERE id BETWEEN @lo AND @hi AND favourites > 0) u
JOIN seq_1_to_50 s ON s.seq <= u.favourites;

-- A year of audit events (SIWA_AUDIT_RETENTION_DAYS' default): each user's first sign-in, each
-- kept session's other sign-in, each sign-out, the sign-ins of daily users (about monthly, from new
-- devices), and the deleted users' sign-up and deletion.
INSERT INTO audit_events (occurred_at, event_type, user_id, session_id, remote_address, detail)
SELECT occurred, type, uid, sid, CONCAT('198.51.100.', MOD(uid, 250) + 1), detail
FROM (
    SELECT created_at AS occurred, 'sign_in' AS type, id AS uid, 4 * id AS sid, '{"flow":"native","clientId":"com.example.siwa"}' AS detail
    FROM seed_users WHERE id BETWEEN @lo AND @hi AND created_at > @now - INTERVAL 365 DAY
    UNION ALL
    SELECT s.created_at, 'sign_in', s.user_id, s.id,
        CONCAT('{"flow":"', IF(s.cookie_hash IS NULL, 'native', 'web'), '","clientId":"', s.apple_client_id, '"}')
    FROM sessions s WHERE s.user_id BETWEEN @lo AND @hi AND MOD(s.id, 4) <> 0 AND s.created_at > @now - INTERVAL 365 DAY
    UNION ALL
    SELECT s.revoked_at, 'session_ended', s.user_id, s.id, '{"reason":"logout"}'
    FROM sessions s WHERE s.user_id BETWEEN @lo AND @hi AND s.revoked_at > @now - INTERVAL 365 DAY
    UNION ALL
    SELECT @now - INTERVAL q.seq * 30 DAY + INTERVAL MOD(u.id, 86400) SECOND, 'sign_in', u.id, NULL, '{"flow":"native","clientId":"com.example.siwa"}'
    FROM seed_users u JOIN seq_1_to_12 q WHERE u.id BETWEEN @lo AND @hi AND u.x <= 0.01 AND @now - INTERVAL q.seq * 30 DAY > u.created_at
    UNION ALL
    SELECT at, 'sign_in', id, NULL, '{"flow":"native","clientId":"com.example.siwa"}' FROM (
        SELECT seq AS id, @now - INTERVAL FLOOR((@n - seq) * 63072000 / @n) SECOND - INTERVAL 1 HOUR AS at FROM seed_chunk
        WHERE MOD(CRC32(seq), 50) = 0) d WHERE at > @now - INTERVAL 365 DAY
    UNION ALL
    SELECT at + INTERVAL 10 DAY, 'account_deleted', id, NULL, '{"source":"user"}' FROM (
        SELECT seq AS id, @now - INTERVAL FLOOR((@n - seq) * 63072000 / @n) SECOND - INTERVAL 1 HOUR AS at FROM seed_chunk
        WHERE MOD(CRC32(seq), 50) = 0) d WHERE at + INTERVAL 10 DAY BETWEEN @now - INTERVAL 365 DAY AND @now
) t ORDER BY occurred;

-- Webhook events of the last 30 days (what the server keeps), each delivered once to one endpoint:
-- sign-ups, sign-outs and deletions.
INSERT INTO webhook_events (public_id, event_type, user_id, body, created_at)
SELECT CONCAT('evt_', MD5(CONCAT('evt|', type, '|', uid, '|', created))), type, uid,
    CONCAT('{"id":"evt_', MD5(CONCAT('evt|', type, '|', uid, '|', created)), '","type":"', type, '","createdAt":', FLOOR(UNIX_TIMESTAMP(created)),
        ',"userId":"', uid, '","data":', data, '}'),
    created
FROM (
    SELECT created_at AS created, 'user.created' AS type, id AS uid,
        CONCAT('{"flow":"native","email":"seed-', id, '@example.com","firstName":null,"lastName":null}') AS data
    FROM seed_users WHERE id BETWEEN @lo AND @hi AND created_at > @now - INTERVAL 30 DAY
    UNION ALL
    SELECT s.revoked_at, 'session.revoked', s.user_id, CONCAT('{"sessionIds":["', s.id, '"],"reason":"logout"}')
    FROM sessions s WHERE s.user_id BETWEEN @lo AND @hi AND s.revoked_at > @now - INTERVAL 30 DAY
    UNION ALL
    SELECT at + INTERVAL 10 DAY, 'user.deleted', id, '{"source":"user","anonymised":false}' FROM (
        SELECT seq AS id, @now - INTERVAL FLOOR((@n - seq) * 63072000 / @n) SECOND - INTERVAL 1 HOUR AS at FROM seed_chunk
        WHERE MOD(CRC32(seq), 50) = 0) d WHERE at + INTERVAL 10 DAY BETWEEN @now - INTERVAL 30 DAY AND @now
) t ORDER BY created;

INSERT INTO webhook_deliveries (event_id, endpoint, user_id, state, attempts, next_attempt_at, pending_since, last_status, delivered_at)
SELECT id, 'https://backend.example.com/siwa/webhook', user_id, 'delivered', 1, created_at, created_at, 200, created_at + INTERVAL 0.2 SECOND
FROM webhook_events WHERE user_id BETWEEN @lo AND @hi;
INSERT INTO webhook_attempts (event_id, endpoint, attempted_at, status, duration_ms)
SELECT id, 'https://backend.example.com/siwa/webhook', created_at + INTERVAL 0.1 SECOND, 200, 40 + MOD(id, 120)
FROM webhook_events WHERE user_id BETWEEN @lo AND @hi;
