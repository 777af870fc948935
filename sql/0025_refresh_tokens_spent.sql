-- Refresh tokens by when a rotation spent them (NULL for each session's live token), for the
-- retention purge (SIWA_SESSION_RETENTION_DAYS). Built in place while siwa serves (no lock on the
-- table's writes).
ALTER TABLE refresh_tokens ADD KEY IF NOT EXISTS refresh_tokens_spent (spent_at), ALGORITHM=INPLACE, LOCK=NONE;
