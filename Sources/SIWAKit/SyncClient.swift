public import Foundation
import StrictJSON
// The sync types an app records (`LessonProgress`, `AchievementProgress`, `SyncProfile`, `SyncLimits`)
// come with `import SIWAKit` alone.
@_exported public import SyncRules

/// Syncs the person's profile, lesson progress and achievements, and the records of the collections
/// the app declares, with the server (`POST /sync`).
///
/// The app records changes here whether online or not; each is merged into the local view by the
/// server's own merge rules (the `SyncRules` module), queued, and stored at once. `sync()` pushes
/// the queue in batches and merges what changed on the server since the cursor; `run()` does so
/// whenever there are changes, backing off exponentially while the server cannot be reached.
/// Because the merge rules are commutative and idempotent, two devices that synced after their
/// last changes hold the same state as the server.
public actor SyncClient {
    private let client: SIWAClient
    private let storage: any KeyValueStorage
    private let storageKey: String
    private var state: SyncState
    private var observers: [UUID: AsyncStream<SyncSnapshot>.Continuation] = [:]
    private var wake: AsyncStream<Void>.Continuation?
    /// The declared collections' converters, in the declaration's order.
    private let converters: [RecordConverter]
    /// The body of a sync and its answer, as the server reads and writes them.
    private let wire: SyncWire
    /// The server's limit on lessons and on achievements per request.
    static let batchLimit = SyncLimits.maximumItems

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
        self.converters = collections.collections.map { RecordConverter(codec: SyncRecordCodec($0)) }
        self.wire = SyncWire(declared: collections)
        self.client = client
        self.storage = storage
        self.storageKey = storageKey
        if let data = try storage.read(storageKey) {
            do {
                state = try JSONCoding.decoder().decode(SyncState.self, from: data)
            } catch {
                throw SIWAError.storage("the sync state in \(storageKey) cannot be read: \(error)")
            }
        } else {
            state = SyncState()
        }
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
        try change { $0 = SyncState() }
    }

    private func change(_ body: (inout SyncState) -> Void) throws {
        var next = state
        body(&next)
        try save(next)
        wake?.yield()
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
            let batch = state.batch(limit: Self.batchLimit, collections: converters)
            let answer: SyncAnswer
            do {
                answer = try await push(batch)
            } catch SIWAError.server(let error) where error.status == 400 && error.code == .invalidRequest && batch.hasChanges {
                var next = state
                next.setAside(batch, collections: converters)
                try save(next)
                refusal = .server(error)
                continue
            }
            var next = state
            next.apply(answer, to: batch, collections: converters)
            try save(next)
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
        var next = state
        next.requeueRefused(collections: converters)
        try save(next)
        wake?.yield()
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

    private func save(_ next: SyncState) throws {
        guard next != state else { return }
        try storage.write(try JSONCoding.encoder().encode(next), for: storageKey)
        let viewChanged = next.view != state.view || next.records != state.records
        state = next
        if viewChanged { for observer in observers.values { observer.yield(state.view) } }
    }

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }
}
