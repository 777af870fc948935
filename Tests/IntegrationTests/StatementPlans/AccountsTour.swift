import AccountData
import Accounts
import Foundation
import Identity
import JOSE
import MariaDB
import SIWATestSupport
import SyncRules

/// Calls every function of `Accounts` that sends a statement, through each of its branches that
/// sends a different one, on one connection, so that its `StatementRecorder` holds every statement
/// of the module. `StatementPlanTests` checks that nothing was missed: each call of
/// `connection.query`/`execute`/`executeWithNext`/`executeBatch` in `Sources/Accounts` must have
/// been recorded, so a new statement fails the test until it is called here.
///
/// It runs on `RepresentativeRows`: user 1 is an Apple user with an active session 1 (a browser's),
/// user 20 a guest. What it writes is a few rows more; the plans are read after it.
struct AccountsTour {
    let connection: Connection
    let team = "TEAMID0001"

    /// Hashes of texts no seeded row uses (those hash `c1`, `l1`, `n1`, ...).
    private func hash(_ text: String) -> [UInt8] { SHA256.hash(Array("tour-\(text)".utf8)) }
    private func sealed(_ client: String = "com.example.app") -> SealedAppleToken {
        SealedAppleToken(ciphertext: [1, 2, 3], keyID: "k1", clientID: client)
    }

    private func signIn(
        sub: String = UUID().uuidString, token: SealedAppleToken? = nil, transferSub: String? = nil, name: String? = nil,
        target: AccountTarget? = nil
    ) throws -> SignedInAccount {
        try connection.transaction {
            try AppleAccounts.signIn(
                AppleSignIn(
                    teamID: team, sub: sub, audience: "com.example.app", email: "\(sub)@privaterelay.appleid.com", emailVerified: true,
                    isPrivateEmail: true, transferSub: transferSub, firstName: name, appleRefreshToken: token),
                attachingTo: target, newUserID: TestIDs.next, on: connection)
        }
    }

    private func session(of userID: UInt64, token: String? = nil, cookie: String? = nil, userIsNew: Bool = false) throws -> UInt64 {
        try connection.transaction {
            try Sessions.create(
                id: TestIDs.next(), userID: userID, appleClientID: "com.example.app", device: "iPhone",
                refreshTokenHash: token.map(hash), cookieHash: cookie.map(hash), lifetime: 3600, userIsNew: userIsNew, on: connection)
        }
    }

    func run(migrationsIn directory: String) throws {
        try migrations(directory)
        try signInAndSessions()
        try guestsAndLinks()
        try webSignIns()
        try account()
        try appleNotificationsAndJobs()
        try webhooks()
        try retention()
        try sync()
        try teamTransfer()
        try backup()
    }

    // MARK: - Core

    private func migrations(_ directory: String) throws {
        let migrator = try Migrator(directory: directory)
        _ = try migrator.applied(on: connection)
        _ = try MigrationStatements.progress(on: connection)
        try MigrationStatements.prepareLockTable(on: connection)
        let row = try MigrationStatements.lockRow(on: connection)
        _ = try MigrationStatements.takeLock(holder: "tour", duration: 60, replacing: row?.holder, on: connection)
        _ = try MigrationStatements.renewLock(holder: "tour", duration: 60, on: connection)
        _ = try MigrationStatements.sessionEnded(1, on: connection)
        // The batches of the files that copy rows in batches (on the generated rows, and on the
        // empty tables of the built-in model's: each way of finding a batch's end).
        for migration in migrator.migrations {
            guard let batch = migration.batch else { continue }
            let start = try MigrationStatements.batchStart(batch, from: nil, on: connection) ?? 1
            _ = try MigrationStatements.batchEnd(batch, from: start, on: connection)
        }
        if let last = migrator.migrations.last {
            try MigrationStatements.recordBatch(of: last, next: 1, on: connection)
            try MigrationStatements.recordProgress(of: last, done: 0, on: connection)
            // Applied already: the insert fails on its key, after it was sent (and recorded).
            _ = try? MigrationStatements.recordApplied(last, on: connection)
        }
        try MigrationStatements.releaseLock(holder: "tour", on: connection)
        _ = try IDBlocks(blockSize: 10).next(.users, on: connection)
        _ = try connection.transaction { try UserLock.lock(1, on: connection) }
    }

    // MARK: - Sign-in and sessions

    private func signInAndSessions() throws {
        _ = try AppleAccounts.isKnown(teamID: team, sub: "000001.0f1e2d3c4b5a.1", on: connection)
        // A new user with Apple's token (its identity's id is needed), then the same Apple ID again with a name.
        let sub = UUID().uuidString
        let user = try signIn(sub: sub, token: sealed()).userID
        _ = try signIn(sub: sub, name: "Ann")
        _ = try signIn()  // new, without a token: the insert goes with the next statement
        // Nonces, each way.
        _ = try Nonces.consume(hash: hash("n1"), expiresAt: Int64(Date().timeIntervalSince1970) + 600, on: connection)
        try Nonces.release(hash: hash("n1"), on: connection)
        try connection.transaction {
            try Nonces.consumeWithNext(hash: hash("n2"), expiresAt: Int64(Date().timeIntervalSince1970) + 600, on: connection)
            _ = try UserLock.lock(user, on: connection)
        }
        // Sessions: created for a known user and for a new one; refreshed each way.
        _ = try session(of: user, token: "t1")
        let guest = TestIDs.next()
        try connection.transaction {
            _ = try Guests.create(id: guest, on: connection)
            _ = try Sessions.create(
                id: TestIDs.next(), userID: guest, appleClientID: nil, device: nil, refreshTokenHash: hash("g1"), cookieHash: nil,
                lifetime: 3600, userIsNew: true, on: connection)
        }
        let rotate = { (presented: String, next: String) in
            try connection.transaction {
                try Sessions.rotate(
                    presentedHash: hash(presented), nextHash: hash(next), lifetime: 3600, reuseInterval: 60, remoteAddress: "192.0.2.1",
                    on: connection)
            }
        }
        _ = try rotate("t1", "t2")  // rotated
        _ = try rotate("t1", "t3")  // the retry within the reuse interval: reissued
        _ = try rotate("t2", "t4")  // spent and not the latest: reused, the session revoked
        let cookieSession = try session(of: user, cookie: "c1")
        _ = try Sessions.owner(ofUnrevoked: cookieSession, on: connection)
        _ = try Sessions.isActive(sessionID: cookieSession, userID: user, on: connection)
        _ = try Sessions.active(cookieHash: hash("c1"), on: connection)
        _ = try Sessions.list(userID: user, on: connection)
        _ = try connection.transaction { try Sessions.revoke(cookieSession, of: user, reason: "user", on: connection) }
        _ = try session(of: user, token: "t5")
        _ = try connection.transaction { try Sessions.revokeAll(of: user, openedWith: "com.example.app", reason: "test", on: connection) }
        _ = try session(of: user, token: "t6")
        _ = try connection.transaction { try Sessions.revokeAll(of: user, reason: "test", on: connection) }
        _ = try SessionRevocations.recent(on: connection)
    }

    private func guestsAndLinks() throws {
        // A guest upgraded by signing in.
        let guest = TestIDs.next()
        try connection.transaction { _ = try Guests.create(id: guest, on: connection) }
        _ = try signIn(target: .guest(userID: guest))
        // A link token minted, checked, used by a new user (no one carries the id yet) ...
        try LinkTokens.mint(hash: hash("l1"), externalID: "ext-new", lifetime: 600, on: connection)
        _ = try LinkTokens.check(hash: hash("l1"), on: connection)
        _ = try LinkTokens.use(hash: hash("l1"), on: connection)
        let linked = try signIn(target: .externalUser(id: "ext-new")).userID
        try LinkTokens.recordUser(linked, hash: hash("l1"), on: connection)
        // ... by the user the id already names (seeded user 3 carries ext-3, and has an Apple ID:
        // refused, after the statements that tell) ...
        _ = try? signIn(target: .externalUser(id: "ext-3"))
        // ... and by an Apple ID whose user carries none yet, which takes it.
        let sub = UUID().uuidString
        _ = try signIn(sub: sub)
        _ = try signIn(sub: sub, target: .externalUser(id: "ext-unheld"))
        // Guests unused for a month listed; one without a session purged.
        _ = try Guests.past(retentionDays: 30, after: .start, limit: 100, on: connection)
        let unused = TestIDs.next()
        try connection.transaction { _ = try Guests.create(id: unused, on: connection) }
        _ = try connection.transaction { try Guests.purge(unused, unusedForDays: 0, on: connection) }
    }

    private func webSignIns() throws {
        let app = WebSignIns.AppRequest(
            clientID: "app", redirectURI: "https://example.com/cb", state: "st", codeChallenge: hash("verifier"))
        try WebSignIns.start(
            stateHash: hash("state"), bindingHash: hash("binding"), nonce: "nonce", returnTo: "/", app: app, lifetime: 600,
            on: connection)
        let user = try signIn().userID
        try connection.transaction {
            guard let pending = try WebSignIns.pending(stateHash: hash("state"), on: connection) else { return }
            try WebSignIns.complete(pending.id, handleHash: hash("handle"), userID: user, isNewUser: false, error: nil, on: connection)
        }
        let completed = try connection.transaction { try WebSignIns.redeem(handleHash: hash("handle"), on: connection) }
        if let completed {
            try WebSignIns.issueCode(completed.id, codeHash: hash("code"), lifetime: 60, on: connection)
            _ = try connection.transaction { try WebSignIns.useCode(codeHash: hash("code"), on: connection) }
            try WebSignIns.recordCodeSession(completed.id, sessionID: 1, on: connection)
        }
    }

    // MARK: - The account

    private func account() throws {
        let user = try signIn(token: sealed()).userID
        _ = try Profile.load(userID: user, on: connection)
        _ = try UserRecord.load(userID: user, auditLimit: 20, on: connection)
        _ = try AuditLog.recent(userID: nil, limit: 20, on: connection)
        _ = try AuditLog.exportsInLastHour(userID: user, on: connection)
        _ = try UserSummary.find("1", on: connection)
        _ = try UserSummary.find("u2@privaterelay.appleid.com", on: connection)
        _ = try UserSummary.find("000001.0f1e2d3c4b5a.1", on: connection)
        _ = try connection.transaction { try UserStatus.disable(user, reason: "test", on: connection) }
        _ = try connection.transaction { try UserStatus.enable(user, on: connection) }
        _ = try connection.transaction { try AccountDeletion.anonymise(userID: user, source: "admin", on: connection) }
        let deleted = try signIn(token: sealed()).userID
        _ = try connection.transaction { try AccountDeletion.delete(userID: deleted, remoteAddress: "192.0.2.1", on: connection) }
    }

    // MARK: - Apple's notifications and the background jobs

    private func appleNotificationsAndJobs() throws {
        let sub = UUID().uuidString
        let user = try signIn(sub: sub, token: sealed()).userID
        _ = try AppleNotifications.record(
            jti: UUID().uuidString, type: "email-disabled", subjectHash: hash(sub), audience: "com.example.app", eventTime: 1_700_000_000,
            on: connection)
        try connection.transaction {
            guard let identity = try AppleNotifications.identity(teamID: team, subject: sub, on: connection) else { return }
            _ = try AppleNotifications.setForwarding(userID: user, address: nil, enabled: false, on: connection)
            _ = try AppleValidations.consentRevoked(userID: user, identityID: identity.identityID, source: "apple", on: connection)
        }
        try AppleNotifications.finish(jti: "jti-1", outcome: "processed", on: connection)

        try AppleRevocationOutbox.queue(sealed(), on: connection)
        for revocation in try AppleRevocationOutbox.claimDue(limit: 5, retryDelay: { _ in 60 }, on: connection) {
            try AppleRevocationOutbox.markFailed(revocation.id, error: "unreachable", on: connection)
            try AppleRevocationOutbox.markDone(revocation.id, on: connection)
        }
        _ = try Outboxes.backlogs(on: connection)
        _ = try Outboxes.validationBacklog(cap: 10_000, on: connection)
        _ = try AppleValidations.shedOverdue(by: 86_400, slot: 86_400, limit: 1_000, on: connection)

        let due = try AppleValidations.claimDue(teamID: team, limit: 4, lease: 600, park: 30 * 86_400, on: connection)
        if due.count >= 2 {
            try AppleValidations.markValid(due[0], nextCheckIn: 86_400, on: connection)
            _ = try connection.transaction { try AppleValidations.tokenRefused(due[1], on: connection) }
        }
        // Another team's due tokens are put a month ahead.
        _ = try AppleValidations.claimDue(teamID: "OTHERTEAM1", limit: 4, lease: 600, park: 30 * 86_400, on: connection)
    }

    // MARK: - Webhooks

    private func webhooks() throws {
        let endpoint = "https://hooks.example.com/siwa"
        let outbox = WebhookOutbox(endpoints: [endpoint])
        let user = try signIn().userID
        let eventID = try outbox.record(.sessionsRevoked(ids: [1], reason: "user"), userID: user, at: 1_700_000_000, on: connection)
        if let due = try WebhookDeliveries.claimNext(endpoints: [endpoint], lease: 30, on: connection) {
            try WebhookDeliveries.markFailed(due, status: 500, error: "down", milliseconds: 5, retryIn: 0, retryHours: 24, on: connection)
        }
        if let due = try WebhookDeliveries.claimNext(endpoints: [endpoint], lease: 30, on: connection) {
            try WebhookDeliveries.markDelivered(due, status: 200, milliseconds: 5, on: connection)
        }
        _ = try WebhookDeliveries.attempts(eventID: eventID, limit: 20, on: connection)
        _ = try WebhookDeliveries.attempts(userID: user, limit: 20, on: connection)
        _ = try WebhookDeliveries.attempts(limit: 20, on: connection)
        _ = try WebhookDeliveries.counts(on: connection)
        _ = try WebhookDeliveries.redeliver(eventIDs: nil, to: [endpoint], on: connection)
        _ = try WebhookDeliveries.redeliver(eventIDs: eventID.map { [$0] }, to: [endpoint], on: connection)
    }

    // MARK: - Retention

    /// Every table's purge, past the retention `siwa jobs` keeps by default (all cases: a new
    /// table's purge is called without a change here), and the oldest rows' ages for `/metrics`.
    private func retention() throws {
        let policy = RetentionPolicy()
        for table in GrowingTable.allCases {
            _ = try table.purge(olderThan: policy.seconds(for: table), limit: policy.batch, on: connection)
        }
        _ = try GrowingTable.oldestAges(on: connection)
    }

    // MARK: - Backup

    /// `siwa backup` and `siwa restore`: the sealed tokens by key and a sample, the server's binary
    /// log and version, the rows counted, and a restore's target database, made and dropped.
    private func backup() throws {
        _ = try BackupStatements.sealedTokenCounts(on: connection)
        _ = try BackupStatements.sealedToken(keyID: "k1", at: 0, on: connection)
        _ = try BackupStatements.writesBinaryLog(on: connection)
        _ = try BackupStatements.serverVersion(on: connection)
        _ = try BackupStatements.rowCounts(on: connection)
        let target = "siwa_tour_\(UInt32.random(in: 0...UInt32.max))"
        try BackupStatements.createDatabase(target, on: connection)
        _ = try BackupStatements.tableCount(database: target, on: connection)
        try BackupStatements.dropDatabase(target, on: connection)
    }

    // MARK: - Sync

    private func sync() throws {
        let user: UInt64 = 1
        let session: UInt64 = 1
        _ = try SyncRecords.storedCollections(on: connection)
        _ = try SyncStore.readConsistent(userID: user, session: session, collections: .none, on: connection)
        _ = try SyncStore.currentVersion(of: user, session: session, on: connection)
        _ = try SyncStore.currentVersion(of: user, session: nil, on: connection)
        try connection.transaction {
            guard let state = try SyncStore.read(userID: user, session: nil, lock: true, on: connection) else { return }
            _ = try SyncStore.advance(userID: user, from: state.version, on: connection)
            let record = SyncRecord(keyValues: [.string("tour")], key: "tour", values: [], deleted: .none)
            let merge = SyncMerge(records: [SyncMergedRecord(collection: 0, name: "notes", record: record, json: Array("{}".utf8))])
            try SyncStore.write([(userID: user, version: state.version + 1, merge: merge)], on: connection)
        }
        try connection.transaction {
            let versions = try SyncStore.lockVersions(of: [1, 2], on: connection)
            try SyncStore.advance(Array(versions.keys), on: connection)
        }
        try connection.transaction {
            let versions = try SyncStore.lockVersions(of: [1, 2], on: connection)
            try SyncStore.advanceAllCurrent(
                versions.sorted(by: { $0.key < $1.key }).map { (userID: $0.key, version: $0.value, session: $0.key == 1 ? 1 : nil) },
                on: connection)
        }
        // A batch of one user too: its lists have one element, which MariaDB plans differently (a
        // list of one tuple is a row comparison, which scanned every user before the ids were listed).
        try connection.transaction {
            let versions = try SyncStore.lockVersions(of: [2], on: connection)
            try SyncStore.advanceAllCurrent([(userID: 2, version: versions[2]!, session: nil)], on: connection)
        }
        _ = try connection.transaction { try SyncStore.areActive([(sessionID: 1, userID: 1), nil], on: connection) }
        for (tombstoned, tombstones) in try SyncRecords.tombstones(of: "settings", olderThanDays: 27, limit: 100, on: connection).prefix(1)
        {
            _ = try connection.transaction { try SyncRecords.purge(tombstones, of: tombstoned, collection: "settings", on: connection) }
        }
    }

    // MARK: - Team transfer

    private func teamTransfer() throws {
        let sending = "OLDTEAM001"
        for identity in try AppleTransfers.unminted(teamID: sending, target: team, after: 0, limit: 2, on: connection) {
            try AppleTransfers.recordMinted(
                identity.identityID, target: team, transferSub: "tsub-tour-\(identity.identityID)", on: connection)
            try AppleTransfers.recordFailure(identity.identityID, target: team, error: "refused", on: connection)
        }
        _ = try AppleTransfers.progress(receivingTeam: team, on: connection)
        // Seeded identity 10 of the old team was minted as tsub-10: a sign-in with it lands on its user.
        _ = try signIn(transferSub: "tsub-10")
        for identity in try AppleTransfers.unresolved(teamID: team, after: 0, limit: 2, on: connection) {
            let origin = AppleTransfers.Origin(identityID: identity.identityID, userID: identity.userID)
            _ = try AppleTransfers.resolve(
                origin, teamID: team, sub: "new-\(identity.identityID)", audience: "com.example.app", email: nil, isPrivateEmail: true,
                on: connection)
            _ = try AppleTransfers.resolve(
                origin, teamID: team, sub: "new-\(identity.identityID)", audience: "com.example.app", email: nil, isPrivateEmail: true,
                on: connection)
        }
    }
}
