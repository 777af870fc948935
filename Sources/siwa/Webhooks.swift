import AccountData
import ArgumentParser
import Foundation
import Identity
import SiwaConfig

struct Webhooks: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the lifecycle webhooks' delivery log and send events again.",
        subcommands: [Status.self, Log.self, Redeliver.self])

    /// The configured endpoints, or exit 78 without endpoints.
    static func endpoints() throws -> [String] {
        guard let webhooks = try loadConfiguration().webhooks else {
            FileHandle.standardError.write(Data("invalid configuration:\n  - SIWA_WEBHOOK_URLS: no webhook endpoint is configured\n".utf8))
            throw ExitCode(78)
        }
        return webhooks.endpoints
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliveries per endpoint: pending, delivered and failed, with the oldest event of each.")

        func run() throws {
            let endpoints = try Webhooks.endpoints()
            let counts = try withAdminUseCases { try $0.webhookDeliveryCounts() }
            for endpoint in Set(endpoints).union(counts.map(\.endpoint)).sorted() {
                let configured = endpoints.contains(endpoint) ? "" : " (no longer configured: nothing is sent there)"
                print("\(endpoint)\(configured)")
                for state in ["pending", "delivered", "failed"] {
                    let count = counts.first { $0.endpoint == endpoint && $0.state == state }
                    let oldest = count.map { ", oldest event \(Webhooks.time($0.oldest))" } ?? ""
                    print("  \(state): \(count?.count ?? 0)\(oldest)")
                }
            }
        }
    }

    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delivery attempts, newest first: time, event, type, user, endpoint, outcome, duration.")

        @Option(help: "Only the attempts of this event id (evt_…).")
        var event: String?

        @Option(help: "Only the attempts of this user's events.")
        var user: UInt64?

        @Option(help: "At most this many lines.")
        var limit = 50

        func run() throws {
            _ = try Webhooks.endpoints()
            let attempts = try withAdminUseCases { try $0.webhookAttempts(eventID: event, userID: user, limit: max(1, limit)) }
            for attempt in attempts {
                let outcome = attempt.error ?? "HTTP \(attempt.status ?? 0)"
                print(
                    "\(Webhooks.time(attempt.time)) \(attempt.eventID) \(attempt.type) user=\(attempt.userID) \(attempt.endpoint) "
                        + "\(outcome) \(attempt.milliseconds) ms")
            }
        }
    }

    struct Redeliver: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue events for delivery again to every configured endpoint (or to one).",
            discussion: "A running `siwa jobs` sends them within a second, in order per user, with a new retry window.")

        @Argument(help: "Event ids (evt_…).")
        var events: [String] = []

        @Flag(help: "Every delivery that was given up.")
        var failed = false

        @Option(help: "Only to this configured endpoint.")
        var endpoint: String?

        func validate() throws {
            guard events.isEmpty == failed else { throw ValidationError("give event ids or --failed, not both") }
        }

        func run() throws {
            let endpoints = try Webhooks.endpoints()
            var targets = endpoints
            if let endpoint {
                guard endpoints.contains(endpoint) else { throw ValidationError("\(endpoint) is not in SIWA_WEBHOOK_URLS") }
                targets = [endpoint]
            }
            let queued = try withAdminUseCases { try $0.redeliverWebhooks(eventIDs: failed ? nil : events, to: targets) }
            print("queued \(queued) deliveries")
            if !failed && queued < events.count * targets.count {
                FileHandle.standardError.write(Data("some event ids are unknown (purged after 30 days, or mistyped)\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    /// `time` (Unix seconds) in ISO 8601, UTC.
    static func time(_ time: Int64) -> String {
        Date(timeIntervalSince1970: Double(time)).ISO8601Format()
    }
}
