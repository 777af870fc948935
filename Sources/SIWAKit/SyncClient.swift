public import Foundation
import StrictJSON
// The sync types an app records (`LessonProgress`, `AchievementProgress`, `SyncProfile`, `SyncLimits`)
// come with `import SIWAKit` alone.
@_exported public import SyncRules

/// Syncs the person's profile, lesson progress and achievements, and the records of the collections
/// the app declares, with the server (`POST /sync`).
///
/// The app records changes here whether online or not; each is merged into the local view by the
/// server's own merge rules (the `SyncRules` module), queued, and stored at once: in an
/// `AppendingStorage` (`FileStorage`, `MemoryStorage`) by appending what it changed to a log
/// beside the stored state, which is stored whole again (and the log emptied) once the log has
/// grown past the state's size, so a change costs one small write however long the queue. A crash
/// within a write loses at most that change. `sync()` pushes the queue in batches within the
/// server's limits (items per request, and bytes: `maximumRequestBytes`) and merges what changed
/// on the server since the cursor; `run()` does so whenever there are changes, backing off
/// exponentially while the server cannot be reached.
/// Because the merge rules are commutative and idempotent, two devices that synced after their
/// last changes hold the same state as the server.
public actor SyncClient {
    private let client: SIWAClient
    private let storage: any KeyValueStorage
    private let storageKey: String
    /// The key of the state's log, `storageKey` and `.log`: nil for a storage that cannot append,
    /// or a `storageKey` too long for the log's name to be a `FileStorage` key too, whose state is
    /// stored whole at each change.
    private let logKey: String?
    private var state: SyncState
    /// The bytes of the state as last stored whole, and of the log written since.
    private var snapshotBytes = 0
    private var logBytes = 0
    /// Whether the next change stores the state whole: the log holds entries to be dropped (cut
    /// short by a crash, or left by an interrupted compaction), or an append failed.
    private var needsCompaction = false
    /// The log is stored whole again once it grows past the state's size, or this, if larger.
    static let minimumLogBytes = 64 * 1024
    private var observers: [UUID: AsyncStream<SyncSnapshot>.Continuation] = [:]
    private var wake: AsyncStream<Void>.Continuation?
    /// The declared collections' converters, in the declaration's order.
    private let converters: [RecordConverter]
    /// The body of a sync and its answer, as the server reads and writes them.
    private let wire: SyncWire
    /// The server's limit on lessons and on achievements per request.
    static let batchLimit = SyncLimits.maximumItems

    /// The most bytes of one sync request's body: the server's limit on request bodies
    /// (`SIWA_MAX_BODY_BYTES`, and nginx's `client_max_body_size`), 1 MiB unless the server says less.
    public static let defaultMaximumRequestBytes = 1_048_576

    /// The most bytes of one sync request's body this client sends (a batch holds fewer changes
    /// when they would make it larger; a single change larger than this still goes alone).
    public nonisolated let maximumRequestBytes: Int

    /// A sync client of `client`'s session for the built-in model only, with the state kept in
    /// `storage` (read from it now, when it holds one).
    /// - Parameters:
    ///   - client: the client whose session authenticates the syncs.
    ///   - storage: where the state is kept (a `FileStorage` in the app's Application Support
    ///     directory, typically; the Keychain is for secrets).
    ///   - storageKey: the state's key in `storage`.
    /// - Throws: `SIWAError.storage` when a stored state exists but cannot be read.
    public init(client: SIWAClient, storage: any KeyValueStorage, storageKey: String = "sync-state") throws {
        try self.init(client: client, storage: storage, storageKey: storageKey, collections: .empty)
    }

    /// A sync client of `client`'s session that also syncs the collections the app declares, with
    /// the state kept in `storage` (read from it now, when it holds one).
    /// - Parameters:
    ///   - client: the client whose session authenticates the syncs.
    ///   - storage: where the state is kept (a `FileStorage` in the app's Application Support
    ///     directory, typically; the Keychain is for secrets).
    ///   - storageKey: the state's key in `storage`.
    ///   - collections: the collections the app declares, read from the same declaration file the
    ///     server is given (`SyncSchema(declaration:)`).
    /// - Throws: `SIWAError.storage` when a stored state exists but cannot be read.
    public init(client: SIWAClient, storage: any KeyValueStorage, storageKey: String = "sync-state", collections: SyncSchema) throws {
        try self.init(
            client: client, storage: storage, storageKey: storageKey, collections: collections,
            maximumRequestBytes: Self.defaultMaximumRequestBytes)
    }

    /// A sync client of `client`'s session that syncs the collections the app declares, with the
    /// state kept in `storage`, and requests of at most `maximumRequestBytes`.
    /// - Parameters:
    ///   - client: the client whose session authenticates the syncs.
    ///   - storage: where the state is kept (a `FileStorage` in the app's Application Support
    ///     directory, typically; the Keychain is for secrets).
    ///   - storageKey: the state's key in `storage` (its log's is this and `.log`).
    ///   - collections: the collections the app declares (`SyncSchema.empty` for none).
    ///   - maximumRequestBytes: the most bytes of a request's body: the server's
    ///     `SIWA_MAX_BODY_BYTES` when it was set below the default (at least 1,024).
    /// - Throws: `SIWAError.storage` when a stored state exists but cannot be read.
    public init(
        client: SIWAClient, storage: any KeyValueStorage, storageKey: String = "sync-state", collections: SyncSchema,
        maximumRequestBytes: Int
    ) throws {
        self.converters = collections.collections.map { RecordConverter(codec: SyncRecordCodec($0)) }
        self.wire = SyncWire(declared: collections)
        self.client = client
        self.storage = storage
        self.storageKey = storageKey
        let logName = storageKey + ".log"
        self.logKey = storage is any AppendingStorage && logName.count <= FileStorage.maximumKeyLength ? logName : nil
        self.maximumRequestBytes = max(1_024, maximumRequestBytes)
        let stored = try Self.load(from: storage, key: storageKey, log: self.logKey)
        (state, snapshotBytes, logBytes, needsCompaction) = (stored.state, stored.snapshotBytes, stored.logBytes, stored.needsCompaction)
    }

    /// A state as stored: whole, then its log's entries of its generation replayed in order.
    struct Stored {
        var state = SyncState()
        var snapshotBytes = 0
        var logBytes = 0
        /// The log holds entries to drop: one cut short, or of an older generation.
        var needsCompaction = false
    }

    /// The state stored under `key` in `storage`, with its log (under `log`, when there is one) replayed.
    /// - Throws: `SIWAError.storage` when the state exists but cannot be read.
    static func load(from storage: any KeyValueStorage, key: String, log logKey: String?) throws -> Stored {
        var stored = Stored()
        if let data = try storage.read(key) {
            do {
                stored.state = try JSONCoding.decoder().decode(SyncState.self, from: data)
            } catch {
                throw SIWAError.storage("the sync state in \(key) cannot be read: \(error)")
            }
            stored.snapshotBytes = data.count
        }
        guard let logKey, let log = try storage.read(logKey) else { return stored }
        let (entries, torn) = SyncLog.entries(in: log)
        stored.logBytes = log.count
        stored.needsCompaction = torn
        for entry in entries {
            guard entry.generation == stored.state.logGeneration else {
                stored.needsCompaction = true
                continue
            }
            for change in entry.changes { stored.state.replay(change) }
        }
        return stored
    }

    /// The local view now.
    public var snapshot: SyncSnapshot { state.view }

    /// Whether local changes wait for the server.
    public var hasPendingChanges: Bool { state.hasPending }

    /// The local view now and after every change, local or from the server.
    /// - Returns: a stream that starts with the current view and keeps only the newest one when
    ///   read slowly, until it is dropped.
    public func snapshots() -> AsyncStream<SyncSnapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        observers[id] = continuation
        continuation.yield(state.view)
        continuation.onTermination = { [weak self] _ in Task { await self?.removeObserver(id) } }
        return stream
    }

    // MARK: Local changes

    /// Records a change of the profile: merged into the local view and queued for the server.
    /// - Parameter profile: the profile's new values, merged with the current ones by the merge rules.
    /// - Throws: `SIWAError.invalidChange` for a value the server would refuse (nothing is
    ///   recorded: a refused change would hold up every change queued after it); `.storage`.
    public func record(profile: SyncProfile) throws {
        if let problem = SyncLimits.problem(in: profile) { throw SIWAError.invalidChange(problem) }
        try change { $0.record(profile: profile) }
    }

    /// Records a lesson's progress: merged into the local view and queued for the server.
    /// - Parameter lesson: the lesson's progress, merged with what the view holds for the same lesson.
    /// - Throws: `SIWAError.invalidChange` for a value the server would refuse (nothing is recorded);
    ///   `.storage`.
    public func record(_ lesson: LessonProgress) throws {
        if let problem = SyncLimits.problem(in: lesson) { throw SIWAError.invalidChange(problem) }
        try change { $0.record(lesson) }
    }

    /// Records an achievement's state: merged into the local view and queued for the server.
    /// - Parameter achievement: the achievement's state, merged with what the view holds for the
    ///   same achievement.
    /// - Throws: `SIWAError.invalidChange` for a value the server would refuse (nothing is recorded);
    ///   `.storage`.
    public func record(_ achievement: AchievementProgress) throws {
        if let problem = SyncLimits.problem(in: achievement) { throw SIWAError.invalidChange(problem) }
        try change { $0.record(achievement) }
    }

    // MARK: Records of declared collections

    /// Saves a record of a declared collection: merged into the local view by the collection's rules
    /// and queued for the server. Its "latest wins" fields that changed are stamped now, by this
    /// device; a counter's growth is counted as this device's; in a collection with deletion, saving
    /// a deleted record restores it (the later of the deletion and the save wins, on every device).
    /// - Parameter record: the record, one of the app's structs.
    /// - Throws: `SIWAError.invalidChange` for a record the server would refuse, naming the member
    ///   (nothing is recorded), or of a collection that is not declared; `.storage`.
    public func save<Record: SyncedRecord>(_ record: Record) throws {
        let converter = try converter(of: Record.self)
        let plain = try Self.json(record)
        let key = try converter.change(of: plain, from: nil, stamp: stamp()).key
        let change = try converter.change(of: plain, from: state.viewRecord(key, converter), stamp: stamp())
        try self.change { $0.record(change, converter) }
    }

    /// Deletes a record of a declared collection whose declaration allows deletion: the deletion is
    /// merged into the local view and queued for the server.
    /// - Parameter record: the record; only its key fields count.
    /// - Throws: `SIWAError.invalidChange` when the collection has no deletion or is not declared;
    ///   `.storage`.
    public func delete<Record: SyncedRecord>(_ record: Record) throws {
        let converter = try converter(of: Record.self)
        let deletion = try converter.deletion(of: try Self.json(record), stamp: stamp())
        try change { $0.record(deletion, converter) }
    }

    /// Adds `amount` to a counter field of a record of a declared collection: this device's own
    /// count in the counter grows by `amount`, so that what several devices add, offline or not,
    /// adds up (the server keeps each device's largest count and sums them). The record's other
    /// fields are left as they are; a record the view does not hold yet is made with them empty.
    ///
    /// ```swift
    /// import SIWAKit
    ///
    /// struct Lap: SyncedRecord {
    ///     static var collection: String { "workouts" }
    ///     var workoutId: String
    ///     var laps: Int64
    /// }
    ///
    /// func lapDone(in sync: SyncClient) async throws {
    ///     try await sync.increment("laps", of: Lap(workoutId: "w1", laps: 0), by: 1)
    /// }
    /// ```
    /// - Parameters:
    ///   - field: the name of a field the collection declares with `"merge": "counter"`.
    ///   - record: the record; only its key fields count.
    ///   - amount: what to add, 1 or more.
    /// - Throws: `SIWAError.invalidChange` when the collection is not declared, `field` is not one
    ///   of its counters, `amount` is below 1, or the count would pass the field's `max` (nothing
    ///   is recorded); `.storage`.
    public func increment<Record: SyncedRecord>(_ field: String, of record: Record, by amount: Int64 = 1) throws {
        let converter = try converter(of: Record.self)
        guard amount >= 1 else {
            throw SIWAError.invalidChange("\(Record.collection).\(field): an increment must be 1 or more, not \(amount)")
        }
        guard let plain = try? JSONValue.parse(try JSONCoding.encoder().encode(record)), case .object(let members) = plain else {
            throw SIWAError.invalidChange("\(Record.self) does not encode as a record")
        }
        let device = state.deviceID
        let key = try converter.change(of: plain, from: nil, stamp: SyncStamp(at: 0, device: device)).key
        let change = try converter.increment(field, by: amount, of: members, current: state.viewRecord(key, converter), device: device)
        try self.change { $0.record(change, converter) }
    }

    /// The records of a declared collection in the local view, deleted ones left out, in order of key.
    /// - Parameter type: the app's struct of the collection.
    /// - Returns: the records, each as the merge rules made it.
    /// - Throws: `SIWAError.invalidChange` when the collection is not declared; `.storage` when a
    ///   record does not decode as `type` (a field the struct's type cannot hold).
    public func records<Record: SyncedRecord>(_ type: Record.Type) throws -> [Record] {
        let converter = try converter(of: type)
        let stored = state.records[converter.collection.name] ?? [:]
        return try stored.keys.sorted().compactMap { key -> Record? in
            guard let record = converter.record(text: stored[key]!), !record.isDeleted else { return nil }
            do {
                return try JSONCoding.decoder().decode(Record.self, from: try converter.plain(record).data())
            } catch {
                throw SIWAError.storage("a record of \(converter.collection.name) does not decode as \(Record.self): \(error)")
            }
        }
    }

    /// The whole state (tests).
    var stateForTests: SyncState { state }

    /// This device's id in "latest wins" stamps and counters: made once and kept with the sync state.
    public var deviceID: String { state.deviceID }

    private func converter<Record: SyncedRecord>(of type: Record.Type) throws -> RecordConverter {
        guard let converter = converters.first(where: { $0.collection.name == Record.collection }) else {
            throw SIWAError.invalidChange("\(Record.collection) is not a collection this client was given (SyncClient's collections)")
        }
        return converter
    }

    /// A stamp of now by this device, later than every stamp it made before: two changes within one
    /// millisecond (a delete, then a save that restores the record) are ordered as they were made,
    /// not tied.
    private func stamp() -> SyncStamp {
        lastStamp = max(Int64((Date().timeIntervalSince1970 * 1000).rounded()), lastStamp + 1)
        return SyncStamp(at: lastStamp, device: state.deviceID)
    }

    /// The time of the latest stamp this client made.
    private var lastStamp: Int64 = 0

    private static func json<Record: Encodable>(_ record: Record) throws -> JSONValue {
        do {
            return try JSONValue.parse(try JSONCoding.encoder().encode(record))
        } catch {
            throw SIWAError.invalidChange("\(Record.self) does not encode as a record: \(error)")
        }
    }

    /// Forgets the local state and queue, for another person signing in on this device.
    /// - Throws: `SIWAError.storage` when the emptied state cannot be stored; the old one is then kept.
    public func reset() throws {
        let old = state
        state = SyncState()
        state.logGeneration = old.logGeneration
        do {
            try compact()
        } catch {
            state = old
            throw error
        }
        for observer in observers.values { observer.yield(state.view) }
        wake?.yield()
    }

    private func change(_ body: (inout SyncState) -> Void) throws {
        body(&state)
        try persist()
        wake?.yield()
    }

    /// Stores what changed since the last call: appended to the log, or, when the log has grown past
    /// the state (or the storage cannot append), the state whole. When neither can be stored, the
    /// state stored before is read back, so that what the client holds is what is stored.
    private func persist() throws {
        let changes = state.takeJournal()
        guard !changes.isEmpty else { return }
        do {
            // Appended once the state was stored whole: the first change stores it (with the
            // device's id, which no entry of the log holds).
            if let logKey, let appending = storage as? any AppendingStorage, !needsCompaction, snapshotBytes > 0 {
                let entry = try SyncLog.frame(SyncLog.Entry(generation: state.logGeneration, changes: changes))
                do {
                    try appending.append(entry, to: logKey)
                } catch {
                    needsCompaction = true
                    throw error
                }
                logBytes += entry.count
                // Stored: a failed compaction is tried again with the next change.
                if logBytes > max(snapshotBytes, Self.minimumLogBytes) { try? compact() }
            } else {
                try compact()
            }
        } catch {
            if let stored = try? Self.load(from: storage, key: storageKey, log: logKey) {
                (state, snapshotBytes, logBytes) = (stored.state, stored.snapshotBytes, stored.logBytes)
                needsCompaction = true
                for observer in observers.values { observer.yield(state.view) }
            }
            throw error
        }
        if changes.contains(where: \.changesView) { for observer in observers.values { observer.yield(state.view) } }
    }

    /// Stores the state whole, as the first of a new generation, and empties the log.
    private func compact() throws {
        var next = state
        next.logGeneration += 1
        let data = try JSONCoding.encoder().encode(next)
        try storage.write(data, for: storageKey)
        state.logGeneration = next.logGeneration
        snapshotBytes = data.count
        logBytes = 0
        do {
            if let logKey { try storage.delete(logKey) }
            needsCompaction = false
        } catch {
            // The log's entries are of an older generation now, and skipped; it is emptied next time.
            needsCompaction = true
        }
    }

    // MARK: Syncing

    /// Pushes every queued change and pulls what changed on the server, in as many requests as
    /// the queue needs (at least one).
    ///
    /// A batch the server refuses for good (400 `invalid_request`: past a limit the app declared,
    /// such as the bytes a guest may store) is set aside, and the rest of the queue is sent: one
    /// refused change never holds back the others, nor what other devices changed. The changes set
    /// aside stay in the view; `hasRefusedChanges` tells, and `requeueRefusedChanges()` sends them
    /// again once what refused them changed (a guest signed in with Apple, a limit raised).
    /// - Throws: `SIWAError.network` or a temporary `.server` error when the server cannot be
    ///   reached (the queue is kept); `.signedOut`; the refusal's `.server` error, after the rest
    ///   was sent, when a batch was set aside; another `.server` error or `.invalidResponse` when
    ///   the server answers what the API does not promise; `.storage`.
    public func sync() async throws {
        var more = false
        var refusal: SIWAError?
        repeat {
            let batch = state.batch(limit: Self.batchLimit, collections: converters, wire: wire, maximumBytes: maximumRequestBytes)
            let answer: SyncAnswer
            do {
                answer = try await push(batch)
            } catch SIWAError.server(let error) where error.status == 400 && error.code == .invalidRequest && batch.hasChanges {
                state.setAside(batch, collections: converters)
                try persist()
                refusal = .server(error)
                continue
            }
            state.apply(answer, to: batch, collections: converters)
            try persist()
            more = answer.more
        } while state.hasPending(sending: converters) || more
        if let refusal { throw refusal }
    }

    /// Whether changes the server refused for good are set aside (see `sync()`).
    public var hasRefusedChanges: Bool { state.hasRefused }

    /// Queues the changes the server refused again, to be sent by the next sync: after what refused
    /// them changed, such as a guest that signed in with Apple (which may store more).
    /// - Throws: `SIWAError.storage` when the state cannot be stored.
    public func requeueRefusedChanges() throws {
        try change { $0.requeueRefused(collections: converters) }
    }

    /// Syncs now and after every local change, or every `interval` seconds, until the task is
    /// cancelled. After a failure it waits `initialDelay`, then twice that, and so on up to
    /// `maximumDelay` seconds (each with 20 % jitter) before trying again. Returns when the device
    /// is signed out.
    /// - Parameters:
    ///   - interval: the most seconds between two syncs when nothing changes locally.
    ///   - initialDelay: the seconds to wait after the first failure.
    ///   - maximumDelay: the most seconds to wait after a failure.
    public func run(every interval: TimeInterval = 60, initialDelay: TimeInterval = 1, maximumDelay: TimeInterval = 300) async {
        let (wakes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        wake = continuation
        defer { wake = nil }
        var failures = 0
        while !Task.isCancelled {
            do {
                try await sync()
                failures = 0
                await Self.wait(for: wakes, upTo: interval)
            } catch SIWAError.signedOut {
                return
            } catch {
                failures += 1
                let delay = min(maximumDelay, initialDelay * pow(2, Double(min(failures - 1, 30))))
                try? await Task.sleep(nanoseconds: UInt64(delay * Double.random(in: 0.8...1.2) * 1e9))
            }
        }
    }

    /// Returns after a wake-up or `interval`, whichever comes first.
    private static func wait(for wakes: AsyncStream<Void>, upTo interval: TimeInterval) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var iterator = wakes.makeAsyncIterator()
                _ = await iterator.next()
            }
            group.addTask { try? await Task.sleep(nanoseconds: UInt64(interval * 1e9)) }
            await group.next()
            group.cancelAll()
        }
    }

    /// One `POST /sync`. Sent again after a broken connection: the server merges with rules that are
    /// idempotent, so a batch it already merged changes nothing the second time.
    private func push(_ batch: SyncBatch) async throws -> SyncAnswer {
        let body = try Self.request(batch, wire: wire, converters)
        return try Self.answer(try await client.authorizedCall("POST", "sync", body: Data(body), replayable: true), wire: wire, converters)
    }

    /// The body of `POST /sync` for `batch`, written by the server's own codec.
    /// - Throws: `SIWAError.invalidChange` for a queued record that does not read as its collection's.
    static func request(_ batch: SyncBatch, wire: SyncWire, _ converters: [RecordConverter]) throws -> [UInt8] {
        var items: [SyncWire.Item] = []
        if let profile = batch.profile { items.append(SyncWire.Item(collection: wire.profile, record: profile.record)) }
        items += batch.lessons.map { SyncWire.Item(collection: SyncWire.progress, record: $0.record) }
        items += batch.achievements.map { SyncWire.Item(collection: SyncWire.achievements, record: $0.record) }
        for (offset, converter) in converters.enumerated() {
            guard let records = batch.records[converter.collection.name] else { continue }
            for key in records.keys.sorted() {
                guard let record = converter.record(text: records[key]!) else {
                    throw SIWAError.invalidChange("a queued record of \(converter.collection.name) does not read as one")
                }
                items.append(SyncWire.Item(collection: SyncWire.firstDeclared + offset, record: record))
            }
        }
        return wire.write(cursor: batch.cursor, items: items, profileAlways: false)
    }

    /// What an answer of `POST /sync` holds, read by the server's own codec.
    /// - Throws: `SIWAError.invalidResponse` for an answer that is not one.
    static func answer(_ data: Data, wire: SyncWire, _ converters: [RecordConverter]) throws -> SyncAnswer {
        let items: [SyncWire.Item]
        let cursor: String?
        let body: SyncWire.Body
        do {
            body = try wire.read(Array(data), limits: answerLimits, checked: false)
            items = try body.records(maximumItems: .max)
            cursor = try body.cursor()
        } catch {
            throw SIWAError.invalidResponse("sync: \(error)")
        }
        guard let cursor else { throw SIWAError.invalidResponse("sync: an answer without a cursor") }
        var answer = SyncAnswer(cursor: cursor, profile: nil, lessons: [], achievements: [], more: body.more, resync: body.resync)
        for converter in converters { answer.records[converter.collection.name] = [] }
        for item in items {
            switch item.collection {
            case SyncWire.progress:
                guard let lesson = LessonProgress(record: item.record) else {
                    throw SIWAError.invalidResponse("sync: a lesson that is not one")
                }
                answer.lessons.append(lesson)
            case SyncWire.achievements:
                guard let achievement = AchievementProgress(record: item.record) else {
                    throw SIWAError.invalidResponse("sync: an achievement that is not one")
                }
                answer.achievements.append(achievement)
            case wire.profile:
                guard let profile = SyncProfile(record: item.record) else {
                    throw SIWAError.invalidResponse("sync: a profile that is not one")
                }
                answer.profile = profile
            default:
                answer.records[converters[item.collection - SyncWire.firstDeclared].collection.name, default: []].append(item.record)
            }
        }
        return answer
    }

    /// What an answer may hold: a page of up to 1,000 items of about 1 MiB, each record's values
    /// within what a declaration allows.
    static let answerLimits = JSONLimits(depth: 16, members: 256, elements: 100_000, stringBytes: 64 * 1024, numberBytes: 1024)

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }
}
