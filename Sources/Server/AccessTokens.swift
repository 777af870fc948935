package import Foundation
import JOSE
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The claims of one of our access tokens that matter to a handler.
package struct AccessTokenClaims: Sendable, Equatable {
    package var userID: UInt64
    package var sessionID: UInt64
    package var expiresAt: Int64

    package init(userID: UInt64, sessionID: UInt64, expiresAt: Int64) {
        self.userID = userID
        self.sessionID = sessionID
        self.expiresAt = expiresAt
    }
}

/// Our own access tokens (DESIGN.md rule 3): RS256 JWTs with a `kid`, 15 minutes, naming the user
/// and the session.
///
/// The signing keys are the `<kid>.pem` files of one directory (RSA, 2048 bits or more). The key
/// whose `kid` sorts last signs; every key in the directory verifies and is published in the JWKS,
/// so tokens signed before `siwa keys rotate` stay valid until they expire. The directory is
/// looked at again at most every `rescanInterval` seconds, so a rotation needs no restart.
package final class AccessTokens: Sendable {
    /// Lifetime of an access token in seconds.
    package static let lifetime = 900
    /// The `typ` of our tokens (RFC 9068), so an identity token from Apple can never pass as one.
    static let type = "at+jwt"

    package struct SigningKey: Sendable {
        package let keyID: String
        let privateKey: RSAPrivateKey
        let publicKey: RSAPublicKey
    }

    private struct KeyRing: Sendable {
        var keys: [SigningKey]
        var modified: timespec
        var checkedAt: Double
        /// Moves on whenever the keys are reloaded, so that verifications made with the old
        /// keys are not reused.
        var generation = 0
    }

    /// Tokens whose signature and claims were verified with the keys of `generation`, with their
    /// claims: a token seen again is not verified again (an RSA verification costs a sync's
    /// request about as much as its database work). Its expiry is checked at every use.
    private struct VerifiedTokens: Sendable {
        var generation = 0
        var claims: [String: AccessTokenClaims] = [:]
    }

    /// Verified tokens kept at most (about 1 KB each).
    static let verifiedCapacity = 20_000

    package let directory: String
    package let issuer: String
    private let rescanInterval: Double
    private let ring: Mutex<KeyRing>
    private let verified = Mutex(VerifiedTokens())

    /// Loads the keys of `directory`.
    /// - Parameter issuer: the `iss` of every token (the site's public URL).
    /// - Throws: `AccessTokenKeyError` when the directory has no usable key.
    package init(directory: String, issuer: String, rescanInterval: Double = 10) throws {
        self.directory = directory
        self.issuer = issuer
        self.rescanInterval = rescanInterval
        let keys = try AccessTokens.loadKeys(directory)
        ring = Mutex(KeyRing(keys: keys, modified: AccessTokens.modificationTime(directory), checkedAt: Date().timeIntervalSince1970))
    }

    /// The current keys, newest (the signing key) last.
    package var keys: [SigningKey] { currentRing().keys }

    /// Signs a new access token for `sessionID` of `userID`.
    package func issue(userID: UInt64, sessionID: UInt64, now: Double = Date().timeIntervalSince1970) throws -> (token: String, expiresIn: Int) {
        guard let key = currentRing().keys.last else { throw AccessTokenKeyError("no signing key") }
        let issuedAt = Int64(now)
        let header = JSONText.object([("alg", .string("RS256")), ("kid", .string(key.keyID)), ("typ", .string(AccessTokens.type))])
        let claims = JSONText.object([
            ("iss", .string(issuer)), ("sub", .string(String(userID))), ("sid", .string(String(sessionID))),
            ("iat", .integer(issuedAt)), ("exp", .integer(issuedAt + Int64(AccessTokens.lifetime))),
        ])
        let token = try CompactJWS.serialize(header: header, claims: claims) { try key.privateKey.signature(for: $0) }
        return (token, AccessTokens.lifetime)
    }

    /// Verifies one of our access tokens: RS256 with a known `kid`, `typ`, `iss`, and `exp` in the future.
    /// - Throws: `HTTPError` 401 `invalid_token` naming what is wrong.
    package func verify(_ token: String, now: Double = Date().timeIntervalSince1970) throws -> AccessTokenClaims {
        let ring = currentRing()
        let known = verified.withLock { $0.generation == ring.generation ? $0.claims[token] : nil }
        let claims = try known ?? verifySignature(token, ring.keys)
        guard Double(claims.expiresAt) > now else { throw HTTPError(401, "invalid_token", "The access token was refused: expired") }
        if known == nil {
            verified.withLock { verified in
                if verified.generation != ring.generation || verified.claims.count >= AccessTokens.verifiedCapacity {
                    verified = VerifiedTokens(generation: ring.generation)
                }
                verified.claims[token] = claims
            }
        }
        return claims
    }

    /// The claims of `token` if it is signed by one of `keys` and well formed, whatever its expiry.
    private func verifySignature(_ token: String, _ keys: [SigningKey]) throws -> AccessTokenClaims {
        func refuse(_ reason: String) -> HTTPError { HTTPError(401, "invalid_token", "The access token was refused: \(reason)") }
        guard let jws = try? CompactJWS(token, maximumLength: 4096) else { throw refuse("malformed") }
        guard (try? jws.header.string("alg")) == "RS256", (try? jws.header.string("typ")) == AccessTokens.type else {
            throw refuse("not one of our access tokens")
        }
        guard let keyID = try? jws.header.string("kid"), let key = keys.first(where: { $0.keyID == keyID }) else {
            throw refuse("unknown key")
        }
        guard key.publicKey.isValidSignature(jws.signature, for: jws.signingInput) else { throw refuse("bad signature") }
        guard let claims = try? jws.decodePayload(), (try? claims.string("iss")) == issuer,
            let userID = (try? claims.string("sub")).flatMap({ $0.flatMap(UInt64.init) }),
            let sessionID = (try? claims.string("sid")).flatMap({ $0.flatMap(UInt64.init) }),
            let expiresAt = (try? claims.integer("exp")).flatMap({ $0 })
        else { throw refuse("malformed claims") }
        return AccessTokenClaims(userID: userID, sessionID: sessionID, expiresAt: expiresAt)
    }

    /// The public keys as a JWKS (`GET /auth/jwks.json`).
    package func jwks() -> String {
        let keys = currentRing().keys.map { key in
            JSONText.object([
                ("kty", .string("RSA")), ("kid", .string(key.keyID)), ("use", .string("sig")), ("alg", .string("RS256")),
                ("n", .string(Base64URL.encode(key.publicKey.modulus))), ("e", .string(Base64URL.encode(key.publicKey.exponent))),
            ])
        }
        return #"{"keys":["# + keys.joined(separator: ",") + "]}"
    }

    // MARK: - Key files

    /// A new `kid`: the UTC time, so that newer keys sort last.
    package static func newKeyID(now: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: now)
    }

    /// Writes a new 2048-bit key to `directory` (mode 0600) and returns its `kid`.
    package static func addKey(to directory: String, now: Date = Date()) throws -> String {
        let keyID = newKeyID(now: now)
        let path = directory + "/" + keyID + ".pem"
        guard !FileManager.default.fileExists(atPath: path) else { throw AccessTokenKeyError("\(path) exists; try again in a second") }
        let pem = try RSAPrivateKey(bits: 2048).pem()
        guard FileManager.default.createFile(atPath: path + ".tmp", contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]),
            rename(path + ".tmp", path) == 0
        else { throw AccessTokenKeyError("cannot write \(path)") }
        return keyID
    }

    /// Removes keys that were replaced more than `retention` seconds ago (the access-token lifetime
    /// plus a margin), judging by the file time of the key that replaced them. The newest key stays.
    /// - Returns: the removed `kid`s.
    package static func pruneKeys(in directory: String, retention: Double, now: Date = Date()) throws -> [String] {
        let files = try keyFiles(directory)
        var removed: [String] = []
        for (index, file) in files.enumerated().dropLast() {
            let successor = directory + "/" + files[index + 1] + ".pem"
            let replacedAt = (try FileManager.default.attributesOfItem(atPath: successor)[.modificationDate] as? Date) ?? now
            if now.timeIntervalSince(replacedAt) > retention {
                try FileManager.default.removeItem(atPath: directory + "/" + file + ".pem")
                removed.append(file)
            }
        }
        return removed
    }

    private static func keyFiles(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".pem") && !$0.hasPrefix(".") }
            .map { String($0.dropLast(4)) }
            .sorted()
    }

    private static func loadKeys(_ directory: String) throws -> [SigningKey] {
        var keys: [SigningKey] = []
        for keyID in try keyFiles(directory) {
            let path = directory + "/" + keyID + ".pem"
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & 0o077 == 0 else {
                throw AccessTokenKeyError("\(path) must be readable by its owner only (chmod 0600)")
            }
            guard keyID.count <= 64, keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw AccessTokenKeyError("\(path): a key id (the file name) is letters, digits, - and _ only")
            }
            guard let pem = FileManager.default.contents(atPath: path), let key = try? RSAPrivateKey(pem: String(decoding: pem, as: UTF8.self)),
                key.publicKey.bitCount >= 2048
            else { throw AccessTokenKeyError("\(path) is not an RSA private key of 2048 bits or more in PEM") }
            keys.append(SigningKey(keyID: keyID, privateKey: key, publicKey: key.publicKey))
        }
        guard !keys.isEmpty else { throw AccessTokenKeyError("\(directory) has no <kid>.pem key; run `siwa keys rotate`") }
        return keys
    }

    private static func modificationTime(_ directory: String) -> timespec {
        var status = stat()
        return stat(directory, &status) == 0 ? status.st_mtim : timespec()
    }

    /// The key ring, rescanned when the directory changed (checked at most every `rescanInterval`).
    /// A directory that became unreadable or empty keeps the keys already loaded.
    private func currentRing() -> KeyRing {
        let now = Date().timeIntervalSince1970
        return ring.withLock { ring in
            guard now - ring.checkedAt >= rescanInterval else { return ring }
            ring.checkedAt = now
            let modified = AccessTokens.modificationTime(directory)
            if modified.tv_sec != ring.modified.tv_sec || modified.tv_nsec != ring.modified.tv_nsec,
                let keys = try? AccessTokens.loadKeys(directory)
            {
                ring.keys = keys
                ring.modified = modified
                ring.generation += 1
            }
            return ring
        }
    }
}

/// A problem with the access-token signing keys.
package struct AccessTokenKeyError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
