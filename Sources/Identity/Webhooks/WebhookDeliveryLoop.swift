import Foundation
import Logging
import Synchronization
package import Threads

/// The webhook deliveries of a running `siwa jobs`, apart from its passes: one thread per endpoint
/// sends what is due as soon as it is due, so a backlog drains at the speed of the endpoint and the
/// database, not a number per pass. An idle lane looks for due deliveries every `pollInterval`
/// seconds (they are written by `siwa serve`, another process, so there is nothing to wake it); a
/// lane whose endpoint could not be reached waits `pauseAfterUnreachable` before trying it again,
/// as a pass used to.
package final class WebhookDeliveryLoop: Sendable {
    let sender: WebhookSender
    let pollInterval: Double
    let pauseAfterUnreachable: Double
    let logger: Logger
    /// The lanes' threads, stopped and joined by `stop()`.
    private let lanes = Mutex<[OwnedThread]>([])
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - pollInterval: seconds an idle lane waits before it looks again.
    ///   - pauseAfterUnreachable: seconds a lane waits after its endpoint could not be reached.
    package init(sender: WebhookSender, pollInterval: Double = 1, pauseAfterUnreachable: Double = 30) {
        self.sender = sender
        self.pollInterval = pollInterval
        self.pauseAfterUnreachable = pauseAfterUnreachable
        self.logger = sender.logger
    }

    /// Starts one thread per endpoint. Call it once, after the process blocked its termination
    /// signals, so that the threads inherit the mask.
    /// - Throws: `ThreadStartError` when a lane's thread cannot start; the lanes that started are
    ///   stopped and joined first.
    package func start() throws(ThreadStartError) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        var threads: [OwnedThread] = []
        for endpoint in sender.settings.endpoints {
            do {
                threads.append(try OwnedThread(name: "siwa-webhooks") { [self] context in runLane(endpoint, context: context) })
            } catch {
                for thread in threads { thread.stop() }
                for thread in threads { thread.join() }
                throw error
            }
        }
        lanes.withLock { $0 = threads }
    }

    /// Stops every lane after the deliveries in flight and waits until their threads have finished
    /// and closed their connections.
    package func stop() {
        let threads = lanes.withLock { $0 }
        for thread in threads { thread.stop() }
        for thread in threads { thread.join() }
    }

    private func runLane(_ endpoint: String, context: OwnedThread.Context) {
        let connection = WebhookSender.Sender(configuration: sender.database, http: sender.settings.http)
        defer { connection.close() }
        let isStopped: @Sendable () -> Bool = { context.isStopping }
        while !isStopped() {
            let round = WebhookSender.LaneRound(endpoint, outcome: WebhookSender.Outcome())
            sender.run(round, with: connection, until: .infinity, stopped: isStopped)
            let (outcome, end, error) = round.result
            if outcome != WebhookSender.Outcome() {
                logger.info(
                    "webhook deliveries",
                    metadata: [
                        "endpoint": "\(endpoint)", "delivered": "\(outcome.delivered)", "failed": "\(outcome.failed)",
                        "givenUp": "\(outcome.givenUp)",
                    ])
            }
            var pause = pollInterval
            if let error {
                logger.warning("webhook deliveries failed; retrying", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
            } else if end == .unreachable {
                logger.warning(
                    "webhook endpoint could not be reached: its deliveries wait", metadata: ["endpoint": "\(endpoint)"])
                pause = pauseAfterUnreachable
            } else if end != .idle {
                continue
            }
            context.waitForStop(timeout: pause)
        }
    }
}
