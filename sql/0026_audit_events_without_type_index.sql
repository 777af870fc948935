-- Audit events are read by user (audit_events_user), by id (the admin log, newest first) and by time
-- (the retention purge, audit_events_time); no statement reads them by type, so the index on
-- (event_type, occurred_at) was written by every sign-in, sign-out and refusal for nothing. Dropped
-- in place while siwa serves (no lock on the table's writes).
ALTER TABLE audit_events DROP INDEX IF EXISTS audit_events_type, ALGORITHM=INPLACE, LOCK=NONE;
