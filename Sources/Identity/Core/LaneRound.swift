import Synchronization
import Threads

/// What the threads of one round of a lane share: the sum of their outcomes, and how the round
/// ended (the first thread to see an end ends it for all). A lane is a queue that threads work
/// through together: the webhook deliveries to one endpoint (`WebhookSender`), the daily checks of
/// Apple's tokens (`AppleValidator`). The first thread of a round runs alone until a backlog shows;
/// then helper threads join it until each finds nothing to claim.
package final class LaneRound<Outcome: Sendable & Equatable>: Sendable {
    /// Why a round ended.
    package enum End: Sendable, Equatable {
        /// Nothing more is due (every thread found nothing to claim).
        case idle
        /// The far end (an endpoint, Apple) could not be reached: what is left waits for a later round.
        case unreachable
        /// The deadline passed, or the round was stopped.
        case interrupted
    }

    /// What the round works for: a webhook endpoint, or `apple`.
    package let lane: String
    private let state: Mutex<(outcome: Outcome, end: End?, error: (any Error)?)>

    /// - Parameters:
    ///   - lane: what the round works for.
    ///   - outcome: the outcome of a round that did nothing.
    package init(_ lane: String, outcome: Outcome) {
        self.lane = lane
        state = Mutex((outcome, nil, nil))
    }

    /// Whether a thread ended the round.
    package var isOver: Bool { state.withLock { $0.end != nil } }

    /// The round's outcome, how it ended (nil while it runs), and the first database error.
    package var result: (Outcome, End?, (any Error)?) { state.withLock { ($0.outcome, $0.end, $0.error) } }

    /// Adds what a thread did to the round's outcome.
    package func record(_ change: (inout Outcome) -> Void) { state.withLock { change(&$0.outcome) } }

    /// Ends the round, unless another thread did first; `unreachable` wins over the rest, so the
    /// lane waits before trying again, and `idle` comes last, once every thread has finished.
    package func end(_ end: End) {
        state.withLock { state in
            if state.end == nil || end == .unreachable { state.end = end }
        }
    }

    /// Ends the round with a database error (reported once every thread has finished).
    package func fail(_ error: any Error) {
        state.withLock { state in
            state.end = .interrupted
            if state.error == nil { state.error = error }
        }
    }

    /// Runs the round: `first` on this thread, which calls `backlog()` when it sees a backlog; a
    /// call while no helper runs starts `helpers` threads (as many as can be had: one that cannot
    /// start is logged and counted), each running `helper` with its number, from 1, until it finds
    /// nothing to do. Returns once `first` and every helper have finished, the round then ended
    /// (`idle` unless a thread ended it otherwise).
    package func run(
        helpers: Int, threadName: String, first: (_ backlog: () -> Void) -> Void, helper: @escaping @Sendable (Int) -> Void
    ) {
        var started: [OwnedThread] = []
        let live = LiveHelpers()
        first {
            guard live.count.load(ordering: .acquiring) == 0 else { return }
            // The helpers of an earlier backlog have finished their work: joined at once.
            for thread in started { thread.join() }
            started = []
            for number in stride(from: 1, through: helpers, by: 1) {
                live.count.wrappingAdd(1, ordering: .relaxed)
                let thread = OwnedThread.startIfPossible(name: threadName) { _ in
                    helper(number)
                    live.count.wrappingSubtract(1, ordering: .releasing)
                }
                if let thread { started.append(thread) } else { live.count.wrappingSubtract(1, ordering: .relaxed) }
            }
        }
        for thread in started { thread.join() }
        end(.idle)
    }

    /// The helpers of a round still working.
    private final class LiveHelpers: Sendable {
        let count = Atomic<Int>(0)
    }
}
