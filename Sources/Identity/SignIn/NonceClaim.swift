import Accounts
import AppleID
import JOSE
import Logging
import MariaDB

/// A sign-in's nonce, accepted once across every worker and host (docs/SECURITY.md rule 1): the
/// one owner of when it is claimed, released, and refused as reused. `Nonces` (Accounts) holds
/// only its statements.
///
/// - A sign-in with an authorization code claims it in a statement of its own before Apple is
///   called (`claimAround(exchange:)`), so that a replay never reaches Apple, and releases it when
///   Apple did not take the code.
/// - A sign-in without a code claims it in the transaction that stores the sign-in
///   (`claim(in:)`), with that transaction's next statement, inside `refusingReuse(_:)`.
struct NonceClaim {
    /// The SHA-256 of the raw nonce.
    let hash: [UInt8]
    /// When its record may go, in Unix seconds.
    let expiresAt: Int64

    /// The claim of `nonce`, kept until the token can no longer pass `exp` with the leeway; nil
    /// without a nonce.
    init?(_ nonce: String?, of identity: IdentityToken, leeway: Int) {
        guard let nonce else { return nil }
        hash = SHA256.hash(Array(nonce.utf8))
        expiresAt = Int64(identity.expiresAt) + Int64(leeway) + 1
    }

    /// Claims it in a statement of its own, then runs `exchange` (Apple's code exchange). When
    /// Apple could not take the code (`appleUnavailable`), the claim is released: the app's retry
    /// of the same request then works once Apple is back. So it is when Apple refused the code
    /// (`codeRefused`, such as a registered redirect URI that is not the authorization's): Apple
    /// issued nothing for it, so nothing was signed in with this nonce, and the app may retry with
    /// the right request. A code that Apple did take was taken by a sign-in whose own claim of its
    /// nonce stays.
    /// - Throws: `IdentityError(.nonceReused)` when it was claimed before (Apple is not called);
    ///   what `exchange` throws.
    func claimAround<T>(on database: Connection, logger: Logger, exchange: () throws -> T) throws -> T {
        guard try Nonces.consume(hash: hash, expiresAt: expiresAt, on: database) else { throw Self.reused }
        do {
            return try exchange()
        } catch let error as IdentityError where [.appleUnavailable, .codeRefused].contains(error.code) {
            release(on: database, logger: logger)
            throw error
        }
    }

    /// Releases a claim whose code Apple never used. A failure is logged: the nonce then stays
    /// spent, and the app starts a new sign-in, as before.
    private func release(on database: Connection, logger: Logger) {
        do {
            try Nonces.release(hash: hash, on: database)
        } catch {
            logger.warning("a nonce could not be released after Apple's failure", metadata: ["error": "\(error)"])
        }
    }

    /// Claims it in the open transaction, with its next statement or its COMMIT: a nonce used
    /// before fails the transaction, which `refusingReuse(_:)` around it turns into
    /// `IdentityError(.nonceReused)`. Two sign-ins with one nonce at once: the second one's claim
    /// waits for the first one's transaction, and fails once it commits.
    func claim(in transaction: Connection) throws {
        try Nonces.consumeWithNext(hash: hash, expiresAt: expiresAt, on: transaction)
    }

    /// Runs `transaction`, in which a nonce may be claimed with `claim(in:)`.
    /// - Throws: what it throws; `IdentityError(.nonceReused)` for the refusal of a nonce used
    ///   before (it comes with the statement that sends the claim, often the COMMIT).
    static func refusingReuse<T>(_ transaction: () throws -> T) throws -> T {
        do {
            return try transaction()
        } catch let error as MariaDBError where Nonces.isReuse(error) {
            throw reused
        }
    }

    /// The refusal of a nonce claimed before.
    private static var reused: IdentityError { IdentityError(.nonceReused, "this nonce was already used; start a new sign-in") }
}
