/// The user an operator named to `siwa admin` by a user id, an Apple `sub`, or an email address
/// (a private relay address among them), as `AdminUseCases.lookUpUser` found it.
package enum UserLookup: Equatable, Sendable {
    /// Exactly one user: their id.
    case one(UInt64)
    /// No user is named so.
    case none
    /// Several users are (an email address more than one account gave): their ids, ascending.
    case several([UInt64])
}
