-- Audit events by time alone, for the retention purge (SIWA_AUDIT_RETENTION_DAYS): each batch
-- deletes the oldest events by this index instead of scanning the table. Built in place while
-- siwa serves (no lock on the table's writes).
ALTER TABLE audit_events ADD KEY IF NOT EXISTS audit_events_time (occurred_at), ALGORITHM=INPLACE, LOCK=NONE;
