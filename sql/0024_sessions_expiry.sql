-- Sessions by their end, for the retention purge (SIWA_SESSION_RETENTION_DAYS): a revoked session's
-- expires_at is set to its revocation, so one index finds every session that ended long enough ago.
-- Built in place while siwa serves (no lock on the table's writes).
ALTER TABLE sessions ADD KEY IF NOT EXISTS sessions_expiry (expires_at), ALGORITHM=INPLACE, LOCK=NONE;
