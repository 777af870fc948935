import Accounts
import Foundation
import HTTPClient
import JOSE
package import Logging
package import MariaDB

/// Delivers the webhook outbox for `siwa jobs`: each due delivery is POSTed with its signature,
/// marked delivered on a 2xx answer, retried later otherwise; every attempt is logged.
package struct WebhookSender {
    /// The name of the signature header.
    package static let signatureHeader = "Siwa-Signature"

    let settings: WebhookSettings
    let database: Connection
    let logger: Logger
    let clock: any WallClock
    let client: HTTPClient

    package init(settings: WebhookSettings, database: Connection, logger: Logger, clock: any WallClock = SystemClock()) {
        self.settings = settings
        self.database = database
        self.logger = logger
        self.clock = clock
        self.client = HTTPClient(configuration: settings.http)
    }

    /// The signature header's value for `body` sent at `time` (Unix seconds):
    /// `t=<time>,v1=<hex HMAC-SHA256 of "<time>.<body>">`, with one `v1` per secret.
    package static func signature(body: [UInt8], time: Int64, secrets: [[UInt8]]) -> String {
        let signed = Array("\(time).".utf8) + body
        return (["t=\(time)"] + secrets.map { "v1=" + hexString(HMACSHA256.authenticationCode(key: $0, message: signed)) })
            .joined(separator: ",")
    }

    /// What one round of deliveries did.
    package struct Outcome: Sendable, Equatable {
        package var delivered = 0
        package var failed = 0
        /// Deliveries given up after the retry window.
        package var givenUp = 0

        package init() {}
    }

    /// Sends up to `batch` due deliveries, one at a time, until `deadline`. An endpoint that cannot
    /// be reached gets no further attempt in this round.
    package func deliver(batch: Int, until deadline: Double) throws -> Outcome {
        var outcome = Outcome()
        var endpoints = settings.endpoints
        let lease = Int(settings.http.timeout) + 60
        for _ in 0..<batch {
            guard clock.now() < deadline,
                let due = try WebhookDeliveries.claimNext(endpoints: endpoints, lease: lease, on: database)
            else { break }
            let body = Array(due.body.utf8)
            let request = HTTPRequest(
                method: "POST", url: due.endpoint,
                headers: [
                    ("Content-Type", "application/json"), ("User-Agent", "siwa-webhooks"), ("Siwa-Event-Id", due.eventID),
                    ("Siwa-Event-Type", due.type),
                    (Self.signatureHeader, Self.signature(body: body, time: Int64(clock.now()), secrets: settings.secrets)),
                ], body: body)
            let started = DispatchTime.now().uptimeNanoseconds
            var status: Int?
            var failure: String?
            do {
                let response = try client.send(request)
                status = response.status
                if !(200..<300).contains(response.status) { failure = "HTTP \(response.status)" }
            } catch {
                failure = "\(error)"
                endpoints.removeAll { $0 == due.endpoint }
            }
            let milliseconds = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
            if let failure {
                let givenUp = try WebhookDeliveries.markFailed(
                    due, status: status, error: failure, milliseconds: milliseconds, retryHours: settings.retryHours, on: database)
                outcome.failed += 1
                if givenUp {
                    outcome.givenUp += 1
                    logger.error(
                        "webhook delivery given up after the retry window; `siwa webhooks redeliver` sends it again",
                        metadata: ["event": "\(due.eventID)", "endpoint": "\(due.endpoint)", "error": "\(failure)"])
                } else {
                    logger.warning(
                        "webhook delivery failed; will retry",
                        metadata: [
                            "event": "\(due.eventID)", "endpoint": "\(due.endpoint)", "attempt": "\(due.attempt)", "error": "\(failure)",
                        ])
                }
            } else {
                try WebhookDeliveries.markDelivered(due, status: status ?? 200, milliseconds: milliseconds, on: database)
                outcome.delivered += 1
            }
        }
        return outcome
    }
}
