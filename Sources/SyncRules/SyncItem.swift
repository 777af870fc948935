// The state a device syncs, and the merge rules that make sync deterministic, commutative and
// idempotent: merging the same change twice, or two devices' changes in either order, gives the
// same stored state. Every rule is a maximum, a minimum or a "latest wins" on a total order.
//
// This module has no dependencies: the server (`Accounts`) stores what these rules merge, and
// `SIWAKit` merges a device's local view with the same code, so both reach the same state.

/// A lesson's progress or an achievement: kept per key, merged by its rules.
public protocol SyncItem: Sendable, Equatable {
    /// The type of the key that identifies an item.
    associatedtype Key: Hashable & Sendable
    /// What identifies the item: two items of the same key are states of the same thing and merge.
    var key: Key { get }
    /// This item and `other` (of the same key) merged.
    /// - Parameter other: an item of the same key.
    /// - Returns: the merged item; the same whichever of the two is `self`.
    func merged(with other: Self) -> Self
}
