package import Foundation
import JOSE
import StrictJSON
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The claims of one of our access tokens that matter to a use case.
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

/// Our own access tokens: JWTs signed with ES256 (P-256, the default) or RS256, with a `kid` and
/// `typ: at+jwt`, living 15 minutes, naming the user and the session.
///
/// The signing keys are the `<kid>.pem` files of one directory (P-256, or RSA of 2048 bits or
/// more). The key whose `kid` sorts last signs; every key in the directory verifies and is
/// published in the JWKS, so tokens signed before `siwa keys rotate` stay valid until they expire,
/// also when the rotation changed the key type. The directory is looked at again at most every
/// `rescanInterval` seconds, so a rotation needs no restart. Files are read outside any lock; the
/// new keys are then swapped in.
package final class AccessTokens: Sendable {
    /// Lifetime of an access token in seconds.
    package static let lifetime = 900
    /// The `typ` of our tokens (RFC 9068), so an identity token from Apple can never pass as one.
    static let type = "at+jwt"

    private struct KeyRing: Sendable {
        var keys: [AccessTokenKey]
        var modified: timespec
        var checkedAt: Double
        /// Moves on whenever the keys are reloaded, so that verifications made with the old
        /// keys are not reused.
        var generation = 0
    }

    /// Tokens whose signature and claims were verified with the keys of `generation`, with their
    /// claims: a token seen again is not verified again. Its expiry is checked at every use. Each
    /// shard keeps the keys of its generation too, so that a verification takes one lock, its
    /// shard's, and no lock that every worker takes.
    private struct VerifiedTokens: Sendable {
        /// -1 until its first verification: no ring's.
        var generation = -1
        var keys: [AccessTokenKey] = []
        var claims: [String: AccessTokenClaims] = [:]
    }

    /// One shard of the verified tokens (a class: a `Mutex` is not copied into an array).
    private final class VerifiedShard: Sendable {
        let tokens = Mutex(VerifiedTokens())
    }

    /// Verified tokens kept at most (about 1 KB each), split evenly between the shards.
    static let verifiedCapacity = 20_000
    /// Shards of the verified tokens, picked by the token's last characters (its signature's).
    static let verifiedShards = 16

    package let directory: String
    package let issuer: String
    private let clock: any WallClock
    private let rescanInterval: Double
    private let ring: Mutex<KeyRing>
    /// The ring's `generation` and `checkedAt` (its bit pattern), set under the ring's lock and read
    /// without it: a verification whose rescan is not due learns the generation without the lock.
    private let ringGeneration = Atomic<Int>(0)
    private let ringCheckedAt: Atomic<UInt64>
    private let verified = (0..<AccessTokens.verifiedShards).map { _ in VerifiedShard() }

    /// Loads the keys of `directory`.
    /// - Parameter issuer: the `iss` of every token (the site's public URL).
    /// - Throws: `AccessTokenKeyError` when the directory has no usable key.
    package init(directory: String, issuer: String, clock: any WallClock = SystemClock(), rescanInterval: Double = 10) throws {
        self.directory = directory
        self.issuer = issuer
        self.clock = clock
        self.rescanInterval = rescanInterval
        let modified = AccessTokenKeyFiles.modificationTime(directory)
        let keys = try AccessTokenKeyFiles.load(directory)
        let checkedAt = clock.now()
        ring = Mutex(KeyRing(keys: keys, modified: modified, checkedAt: checkedAt))
        ringCheckedAt = Atomic(checkedAt.bitPattern)
    }

    /// The current keys, newest (the signing key) last.
    package var keys: [AccessTokenKey] { currentRing().keys }

    /// Signs a new access token for `sessionID` of `userID`.
    package func issue(userID: UInt64, sessionID: UInt64) throws -> (token: String, expiresIn: Int) {
        guard let key = currentRing().keys.last else { throw AccessTokenKeyError("no signing key") }
        let issuedAt = Int64(clock.now())
        let header = JSONText.object([
            ("alg", .string(key.algorithm.rawValue)), ("kid", .string(key.keyID)), ("typ", .string(AccessTokens.type)),
        ])
        let claims = JSONText.object([
            ("iss", .string(issuer)), ("sub", .string(String(userID))), ("sid", .string(String(sessionID))),
            ("iat", .integer(issuedAt)), ("exp", .integer(issuedAt + Int64(AccessTokens.lifetime))),
        ])
        let token = try CompactJWS.serialize(header: header, claims: claims, sign: key.signature(for:))
        return (token, AccessTokens.lifetime)
    }

    /// Verifies one of our access tokens: a known `kid` whose key type matches `alg`, `typ`, `iss`,
    /// and `exp` in the future.
    /// - Throws: `IdentityError(.accessTokenRefused)` naming what is wrong.
    package func verify(_ token: String) throws -> AccessTokenClaims {
        let now = clock.now()
        let generation =
            now - Double(bitPattern: ringCheckedAt.load(ordering: .acquiring)) < rescanInterval
            ? ringGeneration.load(ordering: .acquiring) : currentRing().generation
        let shard = verified[Self.shard(of: token)]
        let (known, shardKeys) = shard.tokens.withLock { verified -> (AccessTokenClaims?, [AccessTokenKey]?) in
            verified.generation == generation ? (verified.claims[token], verified.keys) : (nil, nil)
        }
        // A shard of another generation than the ring's learns the ring's keys.
        let fresh = shardKeys == nil ? currentRing() : nil
        let claims = try known ?? verifySignature(token, shardKeys ?? fresh?.keys ?? [])
        guard Double(claims.expiresAt) > now else { throw IdentityError(.accessTokenRefused, "expired") }
        guard known == nil else { return claims }
        shard.tokens.withLock { verified in
            // A shard of an older generation starts over; one of a newer one (another thread
            // reloaded the keys meanwhile) is left as it is.
            if let fresh, verified.generation < fresh.generation {
                verified = VerifiedTokens(generation: fresh.generation, keys: fresh.keys)
            }
            guard verified.generation == fresh?.generation ?? generation else { return }
            if verified.claims.count >= AccessTokens.verifiedCapacity / AccessTokens.verifiedShards { verified.claims = [:] }
            verified.claims[token] = claims
        }
        return claims
    }

    /// The shard of `token`: its last two bytes, which are its signature's when it is a JWS.
    private static func shard(of token: String) -> Int {
        var bytes = token.utf8.reversed().makeIterator()
        let last = Int(bytes.next() ?? 0)
        let before = Int(bytes.next() ?? 0)
        return (last &* 31 &+ before) % verifiedShards
    }

    /// The claims of `token` if it is signed by one of `keys` and well formed, whatever its expiry.
    private func verifySignature(_ token: String, _ keys: [AccessTokenKey]) throws -> AccessTokenClaims {
        func refuse(_ reason: String) -> IdentityError { IdentityError(.accessTokenRefused, reason) }
        guard let jws = try? CompactJWS(token, maximumLength: 4096) else { throw refuse("malformed") }
        guard let alg = try? jws.header.string("alg"), (try? jws.header.string("typ")) == AccessTokens.type else {
            throw refuse("not one of our access tokens")
        }
        guard let keyID = try? jws.header.string("kid"), let key = keys.first(where: { $0.keyID == keyID }) else {
            throw refuse("unknown key")
        }
        // The key decides the algorithm; a header naming another one is refused, never followed.
        guard alg == key.algorithm.rawValue else { throw refuse("not one of our access tokens") }
        guard key.isValidSignature(jws.signature, for: jws.signingInput) else { throw refuse("bad signature") }
        guard let claims = try? jws.decodePayload(), (try? claims.string("iss")) == issuer,
            let userID = (try? claims.string("sub")).flatMap({ $0.flatMap(UInt64.init) }),
            let sessionID = (try? claims.string("sid")).flatMap({ $0.flatMap(UInt64.init) }),
            let expiresAt = (try? claims.integer("exp")).flatMap({ $0 })
        else { throw refuse("malformed claims") }
        return AccessTokenClaims(userID: userID, sessionID: sessionID, expiresAt: expiresAt)
    }

    /// The public keys as a JWKS (`GET /auth/jwks.json`).
    package func jwks() -> String {
        #"{"keys":["# + currentRing().keys.map(\.jwk).joined(separator: ",") + "]}"
    }

    /// The key ring, rescanned when the directory changed (checked at most every `rescanInterval`).
    /// One caller claims a due rescan under the lock and reads the files after letting it go; the
    /// others go on with the current keys meanwhile. A directory that became unreadable or empty
    /// keeps the keys already loaded.
    private func currentRing() -> KeyRing {
        let now = clock.now()
        let (current, due) = ring.withLock { ring -> (KeyRing, Bool) in
            guard now - ring.checkedAt >= rescanInterval else { return (ring, false) }
            ring.checkedAt = now
            ringCheckedAt.store(now.bitPattern, ordering: .releasing)
            return (ring, true)
        }
        guard due else { return current }
        let modified = AccessTokenKeyFiles.modificationTime(directory)
        guard modified.tv_sec != current.modified.tv_sec || modified.tv_nsec != current.modified.tv_nsec,
            let keys = try? AccessTokenKeyFiles.load(directory)
        else { return current }
        return ring.withLock { ring in
            ring.keys = keys
            ring.modified = modified
            ring.generation += 1
            ringGeneration.store(ring.generation, ordering: .releasing)
            return ring
        }
    }
}

/// The key files of a directory: `<kid>.pem`, readable by their owner only.
package enum AccessTokenKeyFiles {
    /// A new `kid`: the UTC time, so that newer keys sort last.
    package static func newKeyID(now: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: now)
    }

    /// Writes a new key of `algorithm` to `directory` (mode 0600) and returns its `kid`.
    package static func add(_ algorithm: AccessTokenAlgorithm, to directory: String, now: Date) throws -> String {
        let keyID = newKeyID(now: now)
        let path = directory + "/" + keyID + ".pem"
        guard !FileManager.default.fileExists(atPath: path) else { throw AccessTokenKeyError("\(path) exists; try again in a second") }
        let pem = try AccessTokenKey.generatePEM(algorithm)
        guard FileManager.default.createFile(atPath: path + ".tmp", contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]),
            rename(path + ".tmp", path) == 0
        else { throw AccessTokenKeyError("cannot write \(path)") }
        return keyID
    }

    /// Removes keys that were replaced more than `retention` seconds ago (the access-token lifetime
    /// plus a margin), judging by the file time of the key that replaced them. The newest key stays.
    /// - Returns: the removed `kid`s.
    package static func prune(in directory: String, retention: Double, now: Date) throws -> [String] {
        let files = try keyIDs(directory)
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

    static func keyIDs(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".pem") && !$0.hasPrefix(".") }
            .map { String($0.dropLast(4)) }
            .sorted()
    }

    /// Every key of `directory`, the signing key last.
    /// - Throws: `AccessTokenKeyError` naming the first file that is not a usable key, or when
    ///   there is none.
    package static func load(_ directory: String) throws -> [AccessTokenKey] {
        var keys: [AccessTokenKey] = []
        for keyID in try keyIDs(directory) {
            let path = directory + "/" + keyID + ".pem"
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & 0o077 == 0 else {
                throw AccessTokenKeyError("\(path) must be readable by its owner only (chmod 0600)")
            }
            guard keyID.count <= 64, keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw AccessTokenKeyError("\(path): a key id (the file name) is letters, digits, - and _ only")
            }
            guard let pem = FileManager.default.contents(atPath: path),
                let key = AccessTokenKey(keyID: keyID, pem: String(decoding: pem, as: UTF8.self))
            else { throw AccessTokenKeyError("\(path) is not a P-256 private key or an RSA one of 2048 bits or more, in PEM") }
            keys.append(key)
        }
        guard !keys.isEmpty else { throw AccessTokenKeyError("\(directory) has no <kid>.pem key; run `siwa keys rotate`") }
        return keys
    }

    static func modificationTime(_ directory: String) -> timespec {
        var status = stat()
        return stat(directory, &status) == 0 ? status.st_mtim : timespec()
    }
}

/// A problem with the access-token signing keys.
package struct AccessTokenKeyError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
