import Logging
import Synchronization
package import Threads

/// The daily check of Apple's tokens in a running `siwa jobs`, apart from its passes: a thread
/// runs the validator's rounds one after the other, so the checks go out as they come due, at up
/// to the pace's rate, rather than a number per pass. Its round's helper lanes start when a
/// backlog shows and end when they find nothing due. An idle round is followed by a wait of
/// `pace.idlePoll` seconds; one that could not reach Apple by `pauseAfterUnreachable`.
package final class AppleValidationLoop: Sendable {
    let validator: AppleValidator
    let pauseAfterUnreachable: Double
    let logger: Logger
    /// The first lane's thread, stopped and joined by `stop()`.
    private let thread = Mutex<OwnedThread?>(nil)

    /// - Parameter pauseAfterUnreachable: seconds the lanes wait after Apple could not be reached.
    package init(validator: AppleValidator, pauseAfterUnreachable: Double = 30) {
        self.validator = validator
        self.pauseAfterUnreachable = pauseAfterUnreachable
        self.logger = validator.logger
    }

    /// Starts the first lane's thread. Call it once, after the process blocked its termination
    /// signals, so that the threads inherit the mask.
    /// - Throws: `ThreadStartError` when the thread cannot start.
    package func start() throws(ThreadStartError) {
        guard thread.withLock({ $0 == nil }) else { return }
        let started = try OwnedThread(name: "siwa-validation") { [self] context in run(context) }
        thread.withLock { $0 = started }
    }

    /// Stops the lanes after the checks in flight and waits until their threads have finished and
    /// closed their connections.
    package func stop() {
        thread.withLock { $0 }?.stopAndJoin()
    }

    private func run(_ context: OwnedThread.Context) {
        let lane = validator.makeLane()
        defer { lane.close() }
        let stopped: @Sendable () -> Bool = { context.isStopping }
        while !stopped() {
            let round = AppleValidator.Round("apple", outcome: AppleValidator.Outcome())
            validator.run(round, with: lane, until: .infinity, stopped: stopped)
            let (outcome, end, error) = round.result
            if outcome != AppleValidator.Outcome() {
                logger.info(
                    "Apple token validations",
                    metadata: [
                        "validated": "\(outcome.validated)", "consentRevoked": "\(outcome.consentRevoked)", "failed": "\(outcome.failed)",
                    ])
            }
            var pause = validator.pace.idlePoll
            if let error {
                logger.warning("Apple token validations failed; retrying", metadata: ["error": "\(error)"])
            } else if end == .unreachable {
                pause = pauseAfterUnreachable
            }
            context.waitForStop(timeout: pause)
        }
    }
}
