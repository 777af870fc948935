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
        let listener = try Listener(path: config.socketPath, mode: config.socketMode, backlog: config.socketBacklog)
        let pool = WorkerPool(listener: listener, configuration: application.workerPoolConfiguration) { index in
            application.makeWorker(index: index)
        }
        // Every long-lived thread of the process, in the order they start; they stop in the reverse
        // order, the workers first and the cluster's node checks (which every connection asks)
        // last, once every connection is closed.
        let services = ServiceGroup(
            (nodes.map { [Service("cluster node checks", stop: $0.stop)] } ?? [])
                + application.core.services(logger: logger)
                + [
                    TerminationSignals.service { signal in
                        logger.notice("stopping: no new connections; finishing requests in flight", metadata: ["signal": "\(signal)"])
                        listener.shutdown()
                    },
                    pool.service,
                ],
            logger: logger)
        try services.startOrExit(command: "serve")
        logger.notice(
            "serving", metadata: ["socket": "\(config.socketPath)", "threads": "\(config.workerThreads)"])
        // The workers end after SIGTERM or SIGINT, once the requests in flight are answered.
        pool.join()
        // Every thread joined and every connection closed before the process ends.
        services.stop()
        logger.notice("stopped")
    }
}
