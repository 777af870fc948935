/// How far behind the daily check of Apple's refresh tokens is: what `GET /metrics` reports of
/// the queue `siwa jobs` works through.
package struct ValidationBacklog: Sendable, Equatable {
    /// Seconds since the oldest due check was due; 0 when none is due.
    package var overdueSeconds: Int
    /// Checks due now, counted up to `dueCap` (a count beyond it would read every due entry of
    /// the index at each scrape: `dueCap` means at least that many).
    package var due: Int
    /// The most `due` counts.
    package var dueCap: Int

    package init(overdueSeconds: Int, due: Int, dueCap: Int) {
        self.overdueSeconds = overdueSeconds
        self.due = due
        self.dueCap = dueCap
    }
}
