/// Every metric siwa exports, by its Prometheus name (docs/OPERATIONS.md lists them with their labels),
/// except those the modules below this one record themselves: `siwa_database_errors_total` and
/// `siwa_database_reconnects_total` (`MariaDB`'s `Connection.swift`), and
/// `siwa_thread_start_failures_total` (`Threads`' `OwnedThread.startIfPossible`).
package enum MetricNames {
    /// Requests answered, by `route` (the route's pattern, `unmatched` for none) and `status`.
    package static let requests = "siwa_http_requests_total"
    /// Time from the request read to the response handed to the FastCGI connection, by `route`.
    package static let requestDuration = "siwa_http_request_duration_seconds"
    /// Worker threads answering a request right now.
    package static let busyWorkers = "siwa_workers_busy"
    /// Worker threads of the process.
    package static let workers = "siwa_workers"

    /// Sign-ins by `flow` (`native`, `web`) and `result` (`success` or the refusal's code).
    package static let signIns = "siwa_sign_ins_total"
    /// Refresh-token rotations by `result`: `rotated`, `reuse_interval` (a retry within the reuse
    /// interval), `reuse_detected` (the session was revoked), `unknown`, `session_ended`, or an error.
    package static let refreshes = "siwa_refreshes_total"

    /// Calls to Apple by `endpoint` (`token`, `revoke`, `keys`) and `result` (`ok` or Apple's error).
    package static let appleCalls = "siwa_apple_requests_total"
    /// Duration of the calls to Apple, by `endpoint`.
    package static let appleCallDuration = "siwa_apple_request_duration_seconds"
    /// Fetches of Apple's key set by `result`.
    package static let appleKeyFetches = "siwa_apple_key_fetches_total"
    /// Seconds since Apple's key set was fetched (-1: never).
    package static let appleKeysAge = "siwa_apple_keys_age_seconds"

    /// Rows waiting in an outbox, by `outbox` (`revocations`, `webhooks`).
    package static let outboxDepth = "siwa_outbox_depth"
    /// Rows of an outbox whose attempt is due now (not waiting for a retry), by `outbox`.
    package static let outboxDue = "siwa_outbox_due"
    /// Age in seconds of the oldest row of an outbox, 0 when it is empty.
    package static let outboxOldestAge = "siwa_outbox_oldest_age_seconds"
    /// Seconds since the oldest due daily check of an Apple token was due, 0 when none is due.
    package static let appleValidationOverdue = "siwa_apple_validation_overdue_seconds"
    /// Daily checks of Apple's tokens due now, counted up to a cap (10,000).
    package static let appleValidationsDue = "siwa_apple_validations_due"
    /// Seconds since the oldest row of a table that grows with use reached the point its retention
    /// counts from, by `table` (0 when none has): above the table's retention, the purge of
    /// `siwa jobs` falls behind, or does not run.
    package static let retentionOldestAge = "siwa_retention_oldest_age_seconds"

    /// 1 when the scrape's reads of the database (the outboxes, the tables that grow, the daily
    /// check's backlog) all succeeded, 0 when one failed: the database is unavailable to this process.
    package static let databaseUp = "siwa_database_up"
    /// Seconds those reads took together (up to the statement timeout when the database does not
    /// answer): the database's latency as one process sees it, at every scrape.
    package static let databaseReadDuration = "siwa_database_read_seconds"

    /// Apple's server-to-server notifications by `type` and `outcome` (`processed`, `duplicate`,
    /// `unknown_user`, ..., `refused`).
    package static let notifications = "siwa_notifications_total"

    /// Sync requests by `result` (`ok` or the refusal's code).
    package static let syncRequests = "siwa_sync_requests_total"
    /// Progress and achievement rows written by syncs.
    package static let syncRowsWritten = "siwa_sync_rows_written_total"
    /// Sync cursors dropped because the user was never given them (another user's, forged, or
    /// untagged): each such sync answered the whole state with `resync`.
    package static let syncCursorsRefused = "siwa_sync_cursors_refused_total"
    /// Syncs by whether the user's state was in the process's sync cache (`result`: `hit`, `miss`).
    package static let syncCacheLookups = "siwa_sync_cache_lookups_total"
    /// Changes per sync request.
    package static let syncBatchSize = "siwa_sync_batch_changes"
    /// Sync requests committed together in one transaction of the group commit.
    package static let syncCommitGroup = "siwa_sync_commit_group_requests"

    /// Histogram buckets of the duration metrics, in seconds: requests are answered in
    /// milliseconds, a call to Apple in tens to hundreds of them.
    package static let durationBuckets: [String: [Duration]] = [
        requestDuration: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5].map(Duration.seconds),
        appleCallDuration: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10].map(Duration.seconds),
    ]

    /// Histogram buckets of the value histograms.
    package static let valueBuckets: [String: [Double]] = [
        syncBatchSize: [0, 1, 5, 10, 25, 50, 100, 250, 500],
        syncCommitGroup: [1, 2, 4, 8, 16, 32, 64],
    ]
}
