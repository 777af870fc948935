/// The backlog of one durable outbox: the revocations waiting for Apple, or the lifecycle
/// webhook deliveries waiting for the app's backend.
package struct OutboxBacklog: Sendable, Equatable {
    /// `revocations` or `webhooks`.
    package var outbox: String
    /// Rows waiting.
    package var depth: Int
    /// Rows whose attempt is due now: the others wait for a retry after a failure. Due rows
    /// that stay many mean the sender falls behind, or is not running.
    package var due: Int
    /// Seconds since the oldest waiting row was queued; 0 when none waits.
    package var oldestAge: Int

    package init(outbox: String, depth: Int, due: Int, oldestAge: Int) {
        self.outbox = outbox
        self.depth = depth
        self.due = due
        self.oldestAge = oldestAge
    }
}
