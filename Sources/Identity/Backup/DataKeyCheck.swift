package import Accounts
package import MariaDB

/// The proof a restore asks of its data keys: every data key id that seals a stored Apple refresh
/// token is among them, and opens the tokens sampled under it. Without it, a restored siwa would
/// run until its first revocation or daily check at Apple, and only then find the tokens lost.
package enum DataKeyCheck {
    /// How many sealed tokens per data key id a backup keeps in its manifest and a restore samples
    /// from the restored database.
    package static let samplesPerKey = 3

    /// Up to `samplesPerKey` sealed tokens of each data key id of `sealedCounts` (as
    /// `BackupStatements.sealedTokenCounts` gives them), at distinct positions drawn at random.
    package static func samples(of sealedCounts: [String: Int], on connection: Connection) throws -> [SealedAppleToken] {
        var samples: [SealedAppleToken] = []
        for (keyID, count) in sealedCounts.sorted(by: { $0.key < $1.key }) where count > 0 {
            for position in (0..<count).shuffled().prefix(samplesPerKey) {
                if let token = try BackupStatements.sealedToken(keyID: keyID, at: position, on: connection) { samples.append(token) }
            }
        }
        return samples
    }

    /// Nil when `keys` holds every id of `sealedCounts` and opens each of `samples`; otherwise the
    /// problem, naming the key ids (never a key).
    /// - Parameter source: where the keys came from, for the message ("the key bundle keys.siwa").
    package static func problem(
        keys: DataKeys?, source: String, sealedCounts: [String: Int], samples: [SealedAppleToken]
    ) -> BackupError? {
        let needed = sealedCounts.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        let neededText = needed.map { "\($0.key) (\($0.value) token(s))" }.joined(separator: ", ")
        guard let keys else {
            if needed.isEmpty { return nil }
            return BackupError(
                .missing,
                "no data key: the backup's Apple refresh tokens are sealed with data key \(neededText), and \(source)")
        }
        let missing = needed.filter { !keys.keyIDs.contains($0.key) }
        if !missing.isEmpty {
            return BackupError(
                .missing,
                "data key \(missing.map { "\($0.key) (sealing \($0.value) Apple refresh token(s))" }.joined(separator: ", ")) "
                    + "is missing: \(source) holds only \(keys.keyIDs.joined(separator: ", "))")
        }
        let failed = Dictionary(grouping: samples.filter { keys.open($0) == nil }, by: \.keyID)
        guard failed.isEmpty else {
            return BackupError(
                .wrongKey,
                failed.sorted { $0.key < $1.key }.map { keyID, tokens in
                    "data key \(keyID) of \(source) does not open the Apple refresh tokens sealed under \(keyID) "
                        + "(\(tokens.count) of \(samples.filter { $0.keyID == keyID }.count) sampled): it is another key with the same id"
                }.joined(separator: "; "))
        }
        return nil
    }
}
