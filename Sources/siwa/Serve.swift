import ArgumentParser
import FastCGI
import Logging
import MariaDB
import Server

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve FastCGI requests on the configured unix socket until SIGTERM or SIGINT.")

    func run() throws {
        // Before any thread exists, so that every thread inherits the blocked mask (MEASURED.md §5).
        TerminationSignals.block()
        let config = try loadConfiguration()
        let logger = makeLogger(config, label: "siwa")
        initializeFastCGI()
        initializeMariaDBLibrary()

        let application = Application(config: config, logger: logger)
        let listener = try Listener(path: config.socketPath, mode: config.socketMode, backlog: config.socketBacklog)
        try TerminationSignals.onTermination { signal in
            logger.notice("stopping: no new connections; finishing requests in flight", metadata: ["signal": "\(signal)"])
            listener.shutdown()
        }
        let pool = WorkerPool(listener: listener, configuration: application.workerPoolConfiguration) { index in
            application.makeWorker(index: index)
        }
        logger.notice(
            "serving", metadata: ["socket": "\(config.socketPath)", "threads": "\(config.workerThreads)"])
        try pool.run()
        logger.notice("stopped")
    }
}
