import JOSE
package import MariaDB
import StrictJSON

/// The outbox of lifecycle events: each event is written in the transaction of the change it
/// reports, with one delivery per configured endpoint, so that it is sent exactly when the change
/// is committed. `siwa jobs` delivers them (`WebhookDeliveries`). With no endpoint, nothing is
/// written.
package struct WebhookOutbox: Sendable {
    /// The endpoint URLs every new event goes to.
    package let endpoints: [String]

    package init(endpoints: [String] = []) {
        self.endpoints = endpoints
    }

    /// Whether events are recorded at all.
    package var isEnabled: Bool { !endpoints.isEmpty }

    /// Records `event` about `userID`, created at `time` (Unix seconds). Must run inside the
    /// transaction of the change it reports.
    /// - Returns: the event id, or nil when nothing was recorded.
    @discardableResult
    package func record(_ event: LifecycleEvent, userID: UInt64, at time: Double, on connection: Connection) throws -> String? {
        guard isEnabled, !event.isEmpty else { return nil }
        let publicID = "evt_" + hexString(try SecureRandom.bytes(count: 16))
        let body = JSONText.object([
            ("id", .string(publicID)), ("type", .string(event.type)), ("createdAt", .integer(Int64(time))),
            ("userId", .string(String(userID))), ("data", .raw(event.data)),
        ])
        let row = try connection.execute(
            "INSERT INTO webhook_events (public_id, event_type, user_id, body) VALUES (?, ?, ?, ?)", publicID, event.type, userID, body
        ).lastInsertID
        let deliveries = endpoints.map { [row, $0, userID] as [any DatabaseValueConvertible] }
        _ = try connection.execute("INSERT INTO webhook_deliveries (event_id, endpoint, user_id) VALUES \(rows: deliveries)")
        return publicID
    }
}
