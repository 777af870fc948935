-- scripts/bench seed, step 3 of 3: the id blocks past the seeded ids (new users and sessions take
-- ids from there), the plan dropped, and the statistics the optimizer and the report read.
UPDATE id_blocks SET next_id = (SELECT COALESCE(MAX(id), 0) + 1 FROM users) WHERE table_name = 'users';
UPDATE id_blocks SET next_id = (SELECT COALESCE(MAX(id), 0) + 1 FROM sessions) WHERE table_name = 'sessions';
DROP TABLE seed_users;
