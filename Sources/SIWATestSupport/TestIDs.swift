import Synchronization

/// Ids for users and sessions that tests create directly through `Accounts` (the server takes
/// them from `IDBlocks`): distinct within the test process, far above what `IDBlocks` hands out
/// in a test database.
package enum TestIDs {
    private static let last = Atomic<UInt64>(1 << 40)

    package static func next() -> UInt64 {
        last.add(1, ordering: .relaxed).newValue
    }
}
