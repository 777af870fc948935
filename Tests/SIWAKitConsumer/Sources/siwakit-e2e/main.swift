// One device of the SIWAKit end-to-end checks (Tests/EndToEnd/36_siwakit.sh): each run is one
// launch of the "app", with its session and sync state kept in a directory as the app keeps them.
// It is built as an app builds SIWAKit: by a package of its own that depends on this one by path,
// with the server's trait off (Tests/SIWAKitConsumer/prepare.py), and it imports SIWAKit alone.
//
//   siwakit-e2e DIR sign-in APPLE_USER DEVICE     sign in through the emulator; prints the user id
//   siwakit-e2e DIR lesson BS ID STATUS SCORE XP [COMPLETED_AT_MS]
//   siwakit-e2e DIR achievement ID PROGRESS true|false
//   siwakit-e2e DIR profile XP LEVEL STREAK DATE  record a change (no network)
//   siwakit-e2e DIR workout ID NOTE DISTANCE LAPS TAG...  save a workout (examples/sync), no network
//   siwakit-e2e DIR delete-workout ID             delete a workout, no network
//   siwakit-e2e DIR lap ID N                      add N to a workout's laps (increment), no network
//   siwakit-e2e DIR favourite ID LABEL            save a favourite, no network
//   siwakit-e2e DIR records                       the local workouts and favourites as JSON
//   siwakit-e2e DIR server-records                the server's, by a full sync of a new device
//   siwakit-e2e DIR sync                          prints "synced" or "offline (N pending)"
//   siwakit-e2e DIR snapshot                      the local view as JSON
//   siwakit-e2e DIR server-state                  the server's state for this user, as JSON
//   siwakit-e2e DIR me                            prints the user id, or "signed-out REASON"
//   siwakit-e2e DIR sessions                      "ID current|other DEVICE" per session
//   siwakit-e2e DIR revoke ID | delete-account
//   siwakit-e2e DIR walkthrough APPLE_USER DEVICE  in one launch: sign-in, the typed call
//                                                 GET /example/whoami, a sync, a refresh, sign-out;
//                                                 prints one line per step and the session's events
//   siwakit-e2e DIR browser-sign-in CLIENT REDIRECT_URI  a BrowserSignIn: prints the URL to open,
//                                                 reads the URL the browser came back to from
//                                                 stdin, and prints the user id
//   siwakit-e2e DIR loop STOP_FILE               until STOP_FILE exists: a change and a sync, back
//                                                 to back, and every 200 ms a refresh and me first;
//                                                 prints "ok N" per round, every error to stderr,
//                                                 and exits 1 after any
//
// Environment: E2E_URL, E2E_APPLE_URL, E2E_APPLE_ADMIN_SECRET_FILE, E2E_CLIENT_ID;
// E2E_SYNC_COLLECTIONS, the collections the server declares (examples/sync/collections.json); and
// E2E_TRUST_CERTIFICATE, a PEM certificate that DevelopmentTransport trusts (without it, requests
// go through URLSession, which trusts the system's CA bundle only).
import Foundation
import SIWAKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func environment(_ name: String) -> String {
    guard let value = ProcessInfo.processInfo.environment[name] else { fatalError("\(name) is not set") }
    return value
}

/// A record of the example's `workouts` collection, as an app keeps it.
struct Workout: SyncedRecord, Equatable {
    static let collection = "workouts"
    var workoutId: String
    var note: String?
    var distance: Int64?
    var laps: Int64
    var tags: [String]
}

/// A record of the example's `favourites` collection.
struct Favourite: SyncedRecord, Equatable {
    static let collection = "favourites"
    var itemId: String
    var label: String?
}

/// What `records` and `server-records` print.
struct Records: Encodable {
    var workouts: [Workout]
    var favourites: [Favourite]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("siwakit-e2e: \(message)\n".utf8))
    exit(1)
}

/// What the emulator's `POST /admin/sign-in` returns: what the native SDK hands the app.
struct EmulatorSignIn: Decodable {
    var identityToken: String
    var authorizationCode: String?
    var sub: String
    /// Apple's `user` JSON, on the first authorization only.
    var user: String?
}

func appleCredential(for appleUser: String, nonce: SignInNonce) async throws -> AppleSignInCredential {
    let secret = try String(contentsOfFile: environment("E2E_APPLE_ADMIN_SECRET_FILE"), encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    var request = URLRequest(url: URL(string: environment("E2E_APPLE_URL") + "/admin/sign-in")!)
    request.httpMethod = "POST"
    request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    // The emulator hashes the raw nonce into the token, as the app gives Apple `nonce.hashed`.
    request.httpBody = try JSONSerialization.data(withJSONObject: [
        "userId": appleUser, "clientId": environment("E2E_CLIENT_ID"), "nonce": nonce.value,
    ])
    let (data, response) = try await transport.send(request)
    guard response.statusCode == 200 else { fail("emulator sign-in: \(String(decoding: data, as: UTF8.self))") }
    let answer = try JSONDecoder().decode(EmulatorSignIn.self, from: data)
    var credential = AppleSignInCredential(
        identityToken: answer.identityToken, authorizationCode: answer.authorizationCode, user: answer.sub)
    if let user = answer.user, let json = try JSONSerialization.jsonObject(with: Data(user.utf8)) as? [String: Any],
        let name = json["name"] as? [String: Any]
    {
        credential.givenName = name["firstName"] as? String
        credential.familyName = name["lastName"] as? String
    }
    return credential
}

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

func signedOutReason(_ client: SIWAClient) async -> String {
    if case .signedOut(let reason) = await client.session.state { return "signed-out \(reason)" }
    return "signed-in"
}

/// What the example upstream behind `/example/whoami` answers: the ids nginx passed it.
struct WhoAmI: Decodable {
    var userId: String
    var sessionId: String
}

/// One launch that does what an app does in a day, the session's events collected as they come.
@MainActor func walkthrough(appleUser: String, device: String) async throws {
    let stream = await client.session.events()
    let events = Task {
        var seen: [String] = []
        for await event in stream {
            switch event {
            case .signedIn: seen.append("signedIn")
            case .tokenRefreshed: seen.append("tokenRefreshed")
            case .userUpdated: seen.append("userUpdated")
            case .signedOut(let reason): seen.append("signedOut(\(reason))")
            }
            if case .signedOut = event { break }
        }
        return seen
    }
    let nonce = SignInNonce()
    let user = try await client.signIn(with: try await appleCredential(for: appleUser, nonce: nonce), nonce: nonce, device: device)
    print("signed-in \(user.id)")
    let whoami = try await client.send(URLRequest(url: URL(string: environment("E2E_URL") + "/example/whoami")!), decoding: WhoAmI.self)
    print("whoami \(whoami.userId) \(whoami.sessionId == client.session.currentSessionID ? "this-session" : "another-session")")
    try await sync.record(
        LessonProgress(
            beliefSystemID: "walkthrough", lessonID: "w1", status: .completed, score: 70, earnedXP: 30, completedAt: 1_795_000_000_000))
    try await sync.sync()
    print("synced \(await sync.snapshot.lessons.count) lesson(s)")
    clock.skipAnHour()  // the access token now looks expired: the next call refreshes it first
    print("after-refresh \(try await client.me().id)")
    await client.signOut()
    print("events \(await events.value.joined(separator: " "))")
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: siwakit-e2e DIR COMMAND [ARGS]") }
let storage = FileStorage(directory: URL(fileURLWithPath: arguments[1]))
/// The device's clock, which `loop` moves an hour ahead to make the access token look expired.
final class DeviceClock: @unchecked Sendable {  // `offset` is only touched with `lock` held.
    private let lock = NSLock()
    private var offset: TimeInterval = 0
    var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
    func skipAnHour() { lock.withLock { offset += 3600 } }
}
let clock = DeviceClock()
let transport: any HTTPTransport =
    try ProcessInfo.processInfo.environment["E2E_TRUST_CERTIFICATE"].map {
        try DevelopmentTransport(trustingCertificateAt: URL(fileURLWithPath: $0))
    }
    ?? URLSessionTransport()
let client = SIWAClient(baseURL: URL(string: environment("E2E_URL") + "/")!, storage: storage, transport: transport, now: { clock.now })
let collections = try ProcessInfo.processInfo.environment["E2E_SYNC_COLLECTIONS"].map {
    try SyncSchema(declaration: Array(try Data(contentsOf: URL(fileURLWithPath: $0))))
}
let sync = try SyncClient(client: client, storage: storage, collections: collections ?? .empty)
let rest = Array(arguments.dropFirst(3))

do {
    switch arguments[2] {
    case "sign-in":
        let nonce = SignInNonce()
        let user = try await client.signIn(with: try await appleCredential(for: rest[0], nonce: nonce), nonce: nonce, device: rest[1])
        print(user.id)
    case "lesson":
        guard let status = LessonStatus(name: rest[2]) else { fail("status \(rest[2])") }
        try await sync.record(
            LessonProgress(
                beliefSystemID: rest[0], lessonID: rest[1], status: status, score: Int64(rest[3])!, earnedXP: Int64(rest[4])!,
                completedAt: rest.count > 5 ? Int64(rest[5])! : nil))
    case "achievement":
        try await sync.record(
            AchievementProgress(achievementID: rest[0], progress: Int64(rest[1])!, completed: rest[2] == "true", completedAt: nil))
    case "profile":
        try await sync.record(
            profile: SyncProfile(
                totalXP: Int64(rest[0])!, currentLevel: Int64(rest[1])!, streakDays: Int64(rest[2])!, lastActiveDate: rest[3]))
    case "sync":
        do {
            try await sync.sync()
            print("synced")
        } catch SIWAError.network {
            print("offline")
        } catch SIWAError.server(let error) where error.isTemporary {
            print("offline")  // nginx answers 503 while siwa is down
        }
    case "workout":
        try await sync.save(
            Workout(workoutId: rest[0], note: rest[1], distance: Int64(rest[2])!, laps: Int64(rest[3])!, tags: Array(rest.dropFirst(4))))
    case "delete-workout":
        try await sync.delete(Workout(workoutId: rest[0], laps: 0, tags: []))
    case "lap":
        try await sync.increment("laps", of: Workout(workoutId: rest[0], laps: 0, tags: []), by: Int64(rest[1])!)
    case "favourite":
        try await sync.save(Favourite(itemId: rest[0], label: rest[1]))
    case "records":
        try printJSON(Records(workouts: try await sync.records(Workout.self), favourites: try await sync.records(Favourite.self)))
    case "server-records":
        let fresh = try SyncClient(client: client, storage: MemoryStorage(), collections: collections ?? .empty)
        try await fresh.sync()
        try printJSON(Records(workouts: try await fresh.records(Workout.self), favourites: try await fresh.records(Favourite.self)))
    case "snapshot":
        try printJSON(await sync.snapshot)
    case "server-state":
        let fresh = try SyncClient(client: client, storage: MemoryStorage())
        try await fresh.sync()
        try printJSON(await fresh.snapshot)
    case "me":
        do {
            print(try await client.me().id)
        } catch SIWAError.signedOut {
            print(await signedOutReason(client))
        }
    case "sessions":
        for session in try await client.sessions() {
            print(session.id, session.current ? "current" : "other", session.device ?? "")
        }
    case "revoke":
        try await client.revokeSession(id: rest[0])
    case "delete-account":
        try await client.deleteAccount()
        print(await signedOutReason(client))
    case "browser-sign-in":
        let signIn = BrowserSignIn(clientID: rest[0], redirectURI: rest[1])
        FileHandle.standardOutput.write(Data((signIn.url(on: URL(string: environment("E2E_URL") + "/")!).absoluteString + "\n").utf8))
        guard let line = readLine(), let callback = URL(string: line) else { fail("no callback URL on stdin") }
        let user = try await client.completeSignIn(signIn, callback: callback)
        print(user.id)
    case "walkthrough":
        try await walkthrough(appleUser: rest[0], device: rest[1])
    case "loop":
        var rounds = 0
        var errors = 0
        // /auth/ calls (refresh, me) at most every 200 ms, under nginx's rate limit of /auth/; syncs
        // back to back between them.
        var nextAuthCall = Date()
        while !FileManager.default.fileExists(atPath: rest[0]) {
            rounds += 1
            do {
                try await sync.record(
                    LessonProgress(
                        beliefSystemID: "reload", lessonID: "l\(rounds % 50)", status: .inProgress, score: Int64(rounds),
                        earnedXP: Int64(rounds), completedAt: nil))
                if Date() >= nextAuthCall {
                    nextAuthCall = Date().addingTimeInterval(0.2)
                    clock.skipAnHour()
                    _ = try await client.me()  // after a refresh
                }
                try await sync.sync()
                FileHandle.standardOutput.write(Data("ok \(rounds)\n".utf8))
            } catch {
                errors += 1
                FileHandle.standardError.write(Data("siwakit-e2e: round \(rounds): \(error)\n".utf8))
            }
        }
        if errors > 0 { fail("\(errors) of \(rounds) rounds failed") }
    default:
        fail("unknown command \(arguments[2])")
    }
} catch {
    fail("\(arguments[2]): \(error)")
}
