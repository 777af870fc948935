package import Logging
import Synchronization

/// A long-lived part of the process with threads of its own (the workers, the signal thread, a
/// poller): started once, then stopped and joined once.
///
/// Modelled on swift-service-lifecycle's `Service`, but synchronous, like the rest of the threads
/// here: `start` returns once the service's threads run (it does not run the service), and `stop`
/// asks them to end and waits until they have, closing what they own. A service whose threads
/// start lazily, on first use, starts nothing here (its `start` is empty) and is registered for
/// its stop.
package struct Service: Sendable {
    /// What the logs and the start error call it ("session cache poller").
    package let name: String
    private let startBody: @Sendable () throws -> Void
    private let stopBody: @Sendable () -> Void

    /// - Parameters:
    ///   - name: what the logs and the start error call it.
    ///   - start: starts the service's threads; throws when one cannot start (having stopped those
    ///     it did start). Empty for a service whose threads start lazily.
    ///   - stop: asks its threads to stop and joins them; called once, and only after `start`
    ///     succeeded.
    package init(_ name: String, start: @escaping @Sendable () throws -> Void = {}, stop: @escaping @Sendable () -> Void) {
        self.name = name
        self.startBody = start
        self.stopBody = stop
    }

    /// Starts the service's threads.
    /// - Throws: what its `start` throws (a `ThreadStartError`, or the error of its own module).
    package func start() throws { try startBody() }

    /// Stops the service's threads and waits until they have ended.
    package func stopAndJoin() { stopBody() }
}

/// Why a `ServiceGroup` did not start: which service failed, and its error.
package struct ServiceStartError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The name of the service that failed to start.
    package let service: String
    /// What its start threw.
    package let underlying: any Error

    package var description: String { "the \(service) could not start: \(underlying)" }

    /// With the details of `underlying` (its `debugDescription`: the system's reason), for the
    /// operator.
    package var debugDescription: String { "the \(service) could not start: \(String(reflecting: underlying))" }
}

/// The long-lived services of a process, in one place: started in order, stopped and joined in
/// the reverse order (a service may use those started before it, never those after it).
///
/// Modelled on swift-service-lifecycle's `ServiceGroup`, without async: `start()` returns once
/// every service runs, and the caller waits for the end in its own way (`siwa serve` joins its
/// worker pool, which ends after SIGTERM), then calls `stop()`.
package final class ServiceGroup: Sendable {
    private let services: [Service]
    private let logger: Logger
    /// The services started and not yet stopped, in the order they started.
    private let running = Mutex<[Service]>([])

    /// - Parameters:
    ///   - services: in the order they start.
    ///   - logger: where starts, stops and a failed start are logged.
    package init(_ services: [Service], logger: Logger) {
        self.services = services
        self.logger = logger
    }

    /// Starts every service, in order. When one fails, the failure is logged, the services
    /// already started are stopped and joined (in reverse order), and the error is thrown: the
    /// process then has no thread of the group left.
    /// - Throws: `ServiceStartError` naming the service that failed.
    package func start() throws(ServiceStartError) {
        for service in services {
            do {
                try service.start()
            } catch {
                logger.critical(
                    "a service could not start", metadata: ["service": "\(service.name)", "error": "\(String(reflecting: error))"])
                stop()
                throw ServiceStartError(service: service.name, underlying: error)
            }
            running.withLock { $0.append(service) }
            logger.debug("service started", metadata: ["service": "\(service.name)"])
        }
    }

    /// Stops and joins the started services, last started first. Each is stopped once: a second
    /// call does nothing.
    package func stop() {
        let started = running.withLock { running in
            defer { running = [] }
            return running
        }
        for service in started.reversed() {
            logger.debug("stopping a service", metadata: ["service": "\(service.name)"])
            service.stopAndJoin()
        }
    }
}
