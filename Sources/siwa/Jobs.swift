import ArgumentParser
import FastCGI
import Foundation
import HTTPClient
import Identity
import Logging
import MariaDB
import SiwaConfig
import Synchronization
import Threads

struct Jobs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send queued revocations to Apple, re-validate Apple tokens daily, deliver webhooks, purge expired state.",
        discussion:
            "Runs a pass every --interval seconds until SIGTERM or SIGINT, and delivers webhooks continuously in between (an "
            + "unreachable endpoint is tried again after --interval); with --once, one pass and exit.")

    @Flag(help: "Run one pass and exit (status 0 even when Apple could not be reached; the work stays queued).")
    var once = false

    @Option(help: "Seconds between passes.")
    var interval: Double = 30

    func run() throws {
        var config = try loadConfiguration()
        let logger = config.bootstrapLogging(label: "siwa-jobs")
        guard let apple = config.apple, let sessions = config.sessions else {
            FileHandle.standardError.write(
                Data(
                    "invalid configuration:\n  - the SIWA_APPLE_* keys and SIWA_PUBLIC_URL, SIWA_ACCESS_KEYS_DIR, SIWA_DATA_KEYS_FILE: required for jobs\n"
                        .utf8))
            throw ExitCode(78)
        }
        // Before any thread exists, so that every thread inherits the blocked mask.
        if !once { TerminationSignals.block() }
        initializeMariaDBLibrary()
        initializeHTTPClientLibrary()
        // On a cluster, connections return to their first node once it is synced again.
        let nodes = config.database.watchNodes()
        // Without --once the webhooks go out as soon as they are due, from threads of their own,
        // rather than a pass's worth every --interval.
        let deliveries =
            once
            ? nil
            : config.webhooks.map {
                WebhookDeliveryLoop(
                    sender: WebhookSender(settings: $0, database: config.database, logger: logger), pauseAfterUnreachable: interval)
            }
        let appleServices = AppleServices(settings: apple, logger: logger)
        // Without --once Apple's tokens are checked as they come due, on lanes of their own, up to
        // the rate ceiling (SIWA_APPLE_VALIDATION_RATE), rather than a pass's worth every --interval.
        let validations =
            once
            ? nil
            : AppleValidationLoop(
                validator: AppleValidator(
                    apple: appleServices, dataKeys: sessions.dataKeys, database: config.database, webhooks: config.webhooks,
                    logger: logger),
                pauseAfterUnreachable: interval)
        // Set by SIGTERM or SIGINT: the loop finishes its pass and exits.
        let stop = Atomic<Bool>(false)
        // The process's long-lived threads, stopped in the reverse order: the validation lanes and
        // the webhook lanes (each closes its own connection), the signal thread, and the cluster's
        // node checks once every connection is closed.
        let services = ServiceGroup(
            (nodes.map { [Service("cluster node checks", stop: $0.stop)] } ?? [])
                + (once ? [] : [TerminationSignals.service { _ in stop.store(true, ordering: .relaxed) }])
                + (deliveries.map { [Service("webhook lanes", start: $0.start, stop: $0.stop)] } ?? [])
                + (validations.map { [Service("Apple validation lanes", start: $0.start, stop: $0.stop)] } ?? []),
            logger: logger)
        try services.startOrExit(command: "jobs")
        // After the connection below is closed.
        defer { services.stop() }
        let database = Connection(configuration: config.database)
        defer { database.close() }
        let jobs = BackgroundJobs(
            apple: appleServices, settings: sessions, database: database, logger: logger,
            webhooks: config.webhooks, retention: config.retention, deliversWebhooks: deliveries == nil,
            validatesAppleTokens: validations == nil, syncSchema: config.syncSchema)
        repeat {
            do {
                let summary = try jobs.runOnce()
                if once { print(summary) } else if !summary.isEmpty { logger.info("jobs pass", metadata: ["summary": "\(summary)"]) }
            } catch {
                logger.warning("jobs pass failed; retrying next pass", metadata: ["error": "\(error)"])
                if once { throw ExitCode(75) }
            }
            var waited = 0.0
            while !once && !stop.load(ordering: .relaxed) && waited < interval {
                Thread.sleep(forTimeInterval: 0.2)
                waited += 0.2
            }
        } while !once && !stop.load(ordering: .relaxed)
    }
}
