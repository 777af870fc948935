import Foundation
import JOSE
import Synchronization

extension Emulator {
    /// Identity tokens for load tests of a relying party: `count` new people (not stored, so no
    /// code and no state) signing in to `clientID`, each token with its own raw nonce, signed by the
    /// current key on all cores.
    /// - Returns: (token, raw nonce) pairs.
    package func benchmarkTokens(clientID: String, count: Int) throws -> [(token: String, nonce: String)] {
        guard configuration.client(clientID) != nil else { throw EmulatorConfigurationError("unknown client id \(clientID)") }
        let key = currentKey
        let now = clock()
        let teamID = configuration.teamID
        let chunks = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let results = Mutex([[(token: String, nonce: String)]](repeating: [], count: chunks))
        let failure = Mutex<(any Error)?>(nil)
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            var made: [(token: String, nonce: String)] = []
            do {
                for index in stride(from: chunk, to: count, by: chunks) {
                    let userID = "bench-" + hexString(try SecureRandom.bytes(count: 8))
                    let nonce = Base64URL.encode(try SecureRandom.bytes(count: 16))
                    let claims = IdentityClaims(
                        audience: clientID, subject: AppleFormats.sub(teamID: teamID, userID: userID), issuedAt: now,
                        lifetime: Emulator.nativeIdentityTokenLifetime, nonce: SHA256.hex(Array(nonce.utf8)),
                        email: "bench\(index)@example.com",
                        emailVerified: true, isPrivateEmail: false, authTime: now)
                    made.append((try key.sign(claims: claims.json), nonce))
                }
            } catch {
                failure.withLock { $0 = error }
            }
            results.withLock { $0[chunk] = made }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { $0.flatMap { $0 } }
    }
}
