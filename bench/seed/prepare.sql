-- scripts/bench seed, step 1 of 3: the plan of every user, in seed_users, dropped at the end.
-- Set by the script: @n (users), @pinv (the inverse of the rank stride modulo @n, see below),
-- @now (the seeding time, UTC), and the sequence table seq_1_to_N spliced in as `seed_all`.
--
-- Each user id has a rank in a Zipf law of activity: rank = ((id - 1) * @pinv mod @n) + 1, so that
-- the active users are spread over the whole id range (and so over the tables' pages), as they are
-- when the users who stay active signed up at any time. x = rank / @n: 0.001 is among the most
-- active thousandth. What each user holds follows x:
--   x <= 0.01  daily: iPhone and web sessions, 100 to 1,000 lessons, 30 to 300 workouts
--   x <= 0.1   weekly to monthly: an iPhone session used in the last 30 days, tens of records
--   otherwise  signed in once, at sign-up: a lesson or a few, a session that expired 90 days later
-- One id in 50 (CRC32 of the id mod 50 = 0) was deleted: no rows but its audit events and webhooks.
DROP TABLE IF EXISTS seed_users;
CREATE TABLE seed_users (
    id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    x DOUBLE NOT NULL,
    lessons INT NOT NULL,
    achievements INT NOT NULL,
    workouts INT NOT NULL,
    favourites INT NOT NULL,
    created_at DATETIME(3) NOT NULL,
    last_seen DATETIME(3) NOT NULL
) ENGINE=InnoDB;

-- The records a user holds follow x, floored at 0.001: the most active thousandth of a product of
-- any size holds as much as the most active user of 1,000 (1,000 lessons, 100 achievements, 300
-- workouts, 50 favourites), so that a database of 1,000 and one of 1,000,000 users differ in how
-- many users there are, not in how much each of a given activity holds.
INSERT INTO seed_users
SELECT id, x,
    FLOOR(1 / GREATEST(x, 0.001)),
    FLOOR(0.1 / GREATEST(x, 0.001)),
    IF(x <= 0.1, FLOOR(0.3 / GREATEST(x, 0.001)), 0),
    IF(x <= 0.1, FLOOR(0.05 / GREATEST(x, 0.001)), 0),
    created_at,
    CASE
        WHEN x <= 0.01 THEN GREATEST(created_at, @now - INTERVAL MOD(CRC32(CONCAT(id, ':seen')), 86400) SECOND)
        WHEN x <= 0.1 THEN GREATEST(created_at, @now - INTERVAL MOD(CRC32(CONCAT(id, ':seen')), 30 * 86400) SECOND)
        ELSE created_at
    END
FROM (
    SELECT seq AS id, (MOD((seq - 1) * @pinv, @n) + 1) / @n AS x,
        -- Signed up over the last two years, in id order.
        @now - INTERVAL FLOOR((@n - seq) * 63072000 / @n) SECOND - INTERVAL 1 HOUR AS created_at
    FROM seed_all
    WHERE MOD(CRC32(seq), 50) <> 0
) planned;
