package import AccountData
import Accounts

/// The operator's view of the lifecycle webhooks (`siwa webhooks`): how many deliveries wait, were
/// delivered or failed per endpoint, the log of attempts, and sending events again.
extension AdminUseCases {
    /// Deliveries per endpoint and state, with the oldest event of each.
    package func webhookDeliveryCounts() throws -> [DeliveryCount] {
        try WebhookDeliveries.counts(on: database)
    }

    /// Delivery attempts, newest first, of one event or of one user's events when given.
    package func webhookAttempts(eventID: String?, userID: UInt64?, limit: Int) throws -> [DeliveryAttempt] {
        try WebhookDeliveries.attempts(eventID: eventID, userID: userID, limit: limit, on: database)
    }

    /// Queues the events `eventIDs` (or, when nil, every delivery that was given up) for delivery
    /// again to `endpoints`, with a new retry window.
    /// - Returns: the deliveries queued.
    package func redeliverWebhooks(eventIDs: [String]?, to endpoints: [String]) throws -> Int {
        try WebhookDeliveries.redeliver(eventIDs: eventIDs, to: endpoints, on: database)
    }
}
