/// Counts of one team transfer's records (`siwa transfer status`).
package struct TransferProgress: Sendable, Equatable {
    /// The sending team's identities.
    package var identities = 0
    /// Identities with a `transfer_sub` for the receiving team.
    package var minted = 0
    /// Identities whose `transfer_sub` was exchanged for the user's new `sub`.
    package var resolved = 0
    /// Records whose last call to Apple was refused.
    package var failing = 0

    package init() {}
}
