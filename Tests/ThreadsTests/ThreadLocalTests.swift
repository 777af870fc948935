import Synchronization
import Testing
import Threads

@Suite struct ThreadLocalTests {
    /// One per process, as the type asks.
    private static let counter = ThreadLocal<Int> { 10 }

    @Test("Each thread starts from the initial value and sees only its own changes")
    func perThread() throws {
        Self.counter.withValue { $0 += 5 }
        let seenByOther = Mutex<[Int]>([])
        let thread = try OwnedThread(name: "test") { _ in
            seenByOther.withLock { $0.append(Self.counter.value) }
            Self.counter.value = 99
            seenByOther.withLock { $0.append(Self.counter.value) }
        }
        thread.join()
        #expect(seenByOther.withLock { $0 } == [10, 99])
        #expect(Self.counter.value == 15)
        Self.counter.value = 10
    }

    @Test("A thread's value is released when the thread ends")
    func releasedWithThread() throws {
        let freed = Freed()
        let local = ThreadLocal<Witness?> { nil }
        let thread = try OwnedThread(name: "test") { _ in local.value = Witness(freed) }
        thread.join()
        let released = freed.value.load(ordering: .relaxed)
        #expect(released)
    }
}

/// Set when a `Witness` goes away.
private final class Freed: Sendable {
    let value = Atomic<Bool>(false)
}

/// Sets its `Freed` when it goes away.
private final class Witness: Sendable {
    let freed: Freed
    init(_ freed: Freed) { self.freed = freed }
    deinit { freed.value.store(true, ordering: .relaxed) }
}
