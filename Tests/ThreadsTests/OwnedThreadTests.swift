import Foundation
import Synchronization
import Testing
import Threads

/// Counts its closes.
private final class Resource: ThreadOwnedResource, Sendable {
    let closes = Atomic<Int>(0)
    func close() { closes.add(1, ordering: .relaxed) }
}

@Suite struct OwnedThreadTests {
    @Test("A thread runs its body; join waits for it to end, and a second join returns at once")
    func runsAndJoins() throws {
        let ran = Atomic<Bool>(false)
        let thread = try OwnedThread(name: "test") { _ in ran.store(true, ordering: .relaxed) }
        thread.join()
        let didRun = ran.load(ordering: .relaxed)
        #expect(didRun)
        thread.join()
    }

    @Test("stop() ends a wait at once and the body sees isStopping; what the thread owns is closed once when it ends")
    func stopsAndCloses() throws {
        let resource = Resource()
        let waited = Mutex<(stopped: Bool, seen: Bool)?>(nil)
        let thread = try OwnedThread(name: "test") { context in
            context.own(resource)
            let stopped = context.waitForStop(timeout: 3600)
            waited.withLock { $0 = (stopped, context.isStopping) }
        }
        let closesBefore = resource.closes.load(ordering: .relaxed)
        #expect(closesBefore == 0)
        thread.stopAndJoin()
        #expect(waited.withLock { $0 }.map { $0.stopped && $0.seen } == true)
        let closesAfter = resource.closes.load(ordering: .relaxed)
        #expect(closesAfter == 1)
    }

    @Test("A wait that is not stopped ends after its timeout and says the thread goes on")
    func waitTimesOut() throws {
        let result = Mutex<Bool?>(nil)
        let thread = try OwnedThread(name: "test") { context in
            result.withLock { $0 = context.waitForStop(timeout: 0.01) }
        }
        thread.join()
        #expect(result.withLock { $0 } == false)
    }
}
