import AppleID
import ArgumentParser
import CoreMetrics
import FastCGI
import Foundation
import HTTPClient
import Identity
import Logging
import MariaDB
import Server
import SiwaConfig
import Telemetry
import Threads

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve FastCGI requests on the configured unix socket until SIGTERM or SIGINT.")

    func run() throws {
        // Before any thread exists, so that every thread inherits the blocked mask (libfcgi's own
        // SIGTERM handler would otherwise keep the process alive; see docs/ARCHITECTURE.md).
        TerminationSignals.block()
        var config = try loadConfiguration()
        let logger = config.bootstrapLogging(label: "siwa")
        // On a cluster, connections return to their first node once it is synced again.
        let nodes = config.database.watchNodes()
        guard config.apple != nil, config.sessions != nil else {
            FileHandle.standardError.write(
                Data(
                    ("invalid configuration:\n"
                        + (config.apple == nil
                            ? "  - SIWA_APPLE_TEAM_ID, SIWA_APPLE_KEY_ID, SIWA_APPLE_PRIVATE_KEY_FILE and a client id: required to serve\n"
                            : "")
                        + (config.sessions == nil
                            ? "  - SIWA_PUBLIC_URL, SIWA_ACCESS_KEYS_DIR and SIWA_DATA_KEYS_FILE: required to serve\n" : ""))
                        .utf8))
            throw ExitCode(78)
        }
        initializeFastCGI()
        initializeMariaDBLibrary()
        initializeHTTPClientLibrary()

        // Every metric of the process goes to the exporter that GET /metrics renders.
        let metrics = config.bootstrapMetrics()
        let application = Application(config: config, logger: logger, metrics: metrics)
        if let keys = application.apple?.keys as? AppleKeyCache {
            // Fetch Apple's keys before the first sign-in needs them, without delaying the start.
            keys.refreshInBackground { status in
                logger.notice(
                    "Apple keys",
                    metadata: ["state": "\(status.health.rawValue)", "kids": "\(status.keyIDs)", "error": "\(status.lastError ?? "-")"])
            }
        }
        let listener = try Listener(path: config.socketPath, mode: config.socketMode, backlog: config.socketBacklog)
        let signals = try TerminationSignals.onTermination { signal in
            logger.notice("stopping: no new connections; finishing requests in flight", metadata: ["signal": "\(signal)"])
            listener.shutdown()
        }
        let pool = WorkerPool(listener: listener, configuration: application.workerPoolConfiguration) { index in
            application.makeWorker(index: index)
        }
        logger.notice(
            "serving", metadata: ["socket": "\(config.socketPath)", "threads": "\(config.workerThreads)"])
        try pool.run()
        // Every thread joined and every connection closed before the process ends.
        application.stop()
        nodes?.stop()
        signals.join()
        logger.notice("stopped")
    }
}
