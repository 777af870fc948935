import Logging
import Synchronization
import Testing
import Threads

/// The error of a start that fails.
private struct Refused: Error, CustomStringConvertible, CustomDebugStringConvertible {
    var description: String { "refused" }
    var debugDescription: String { "refused: details for the log" }
}

/// What the services of a test did, in order: "start a", "stop a".
private final class Journal: Sendable {
    let entries = Mutex<[String]>([])

    func record(_ entry: String) { entries.withLock { $0.append(entry) } }

    var all: [String] { entries.withLock { $0 } }

    /// A service that records its start and stop; its start throws when `failing`.
    func service(_ name: String, failing: Bool = false) -> Service {
        Service(
            name,
            start: {
                self.record("start \(name)")
                if failing { throw Refused() }
            },
            stop: { self.record("stop \(name)") })
    }
}

@Suite struct ServiceGroupTests {
    private let logger = Logger(label: "test")

    @Test("Services start in the order given and stop in the reverse order, each once")
    func startsInOrderStopsInReverse() throws {
        let journal = Journal()
        let group = ServiceGroup([journal.service("a"), journal.service("b"), journal.service("c")], logger: logger)
        try group.start()
        #expect(journal.all == ["start a", "start b", "start c"])
        group.stop()
        group.stop()
        #expect(journal.all == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
    }

    @Test("A start that fails stops the services already started, in reverse, and names the one that failed; the rest never start")
    func failedStartStopsTheStarted() {
        let journal = Journal()
        let group = ServiceGroup(
            [journal.service("a"), journal.service("b"), journal.service("c", failing: true), journal.service("d")], logger: logger)
        let error = #expect(throws: ServiceStartError.self) { try group.start() }
        #expect(error?.service == "c")
        #expect(error?.underlying is Refused)
        #expect(error?.description == "the c could not start: refused")
        #expect(error?.debugDescription == "the c could not start: refused: details for the log")
        // The failing one is not stopped: its start cleans up after itself.
        #expect(journal.all == ["start a", "start b", "start c", "stop b", "stop a"])
        group.stop()
        #expect(journal.all.count == 5)
    }

    @Test("Services of real threads: stopping the group stops and joins them, last started first")
    func stopsThreads() throws {
        let journal = Journal()
        func threadService(_ name: String) -> Service {
            let thread = Mutex<OwnedThread?>(nil)
            return Service(
                name,
                start: {
                    let started = try OwnedThread(name: name) { context in
                        context.waitForStop(timeout: 3600)
                        journal.record("ended \(name)")
                    }
                    thread.withLock { $0 = started }
                },
                stop: { thread.withLock { $0 }?.stopAndJoin() })
        }
        let group = ServiceGroup([threadService("first"), threadService("second")], logger: logger)
        try group.start()
        group.stop()
        #expect(journal.all == ["ended second", "ended first"])
    }
}
