import Dispatch
import FastCGI
import Foundation
import JOSE
import SIWAFixtures
import SIWATestSupport
import Server
import StrictJSON
import Synchronization
import Testing

/// A database that stops answering (its process stopped with SIGSTOP: the socket accepts, nothing
/// answers) under a concurrent load of syncs, refreshes and sign-ins through the handlers, on a
/// private MariaDB of the test's own.
///
/// `SIWA_TEST_FREEZE_TIMEOUT` (SIWA_DB_TIMEOUT, 2 s by default), `SIWA_TEST_FREEZE_SECONDS` (how
/// long the load runs against the frozen server, 8 s) and `SIWA_TEST_FREEZE_THREADS` (worker
/// threads, 12) change the run, e.g. to measure the default timeout of 10 s by hand.
@Suite(.serialized) struct FrozenDatabaseTests {
    /// One request of the load: its kind, status and duration.
    struct Answer: Sendable {
        let kind: String
        let status: Int
        let seconds: Double
    }

    @Test(
        "A frozen database: every request of a concurrent load (syncs, refreshes, sign-ins) is answered 503 within SIWA_DB_TIMEOUT and 1.5 s, reconnects included; thawed, each succeeds again"
    )
    func frozenDatabase() throws {
        let settings = ProcessInfo.processInfo.environment
        let timeout = Int(settings["SIWA_TEST_FREEZE_TIMEOUT"] ?? "") ?? 2
        let seconds = Double(settings["SIWA_TEST_FREEZE_SECONDS"] ?? "") ?? 8
        let threads = Int(settings["SIWA_TEST_FREEZE_THREADS"] ?? "") ?? 12
        let server = try PrivateMariaDB()
        defer { server.stop() }
        let (frozen, thawed) = try load(on: server, timeout: timeout, seconds: seconds, threads: threads)

        for kind in ["sync", "refresh", "guest", "signIn"] {
            let answers = frozen.filter { $0.kind == kind }
            let statuses = Dictionary(grouping: answers, by: \.status).mapValues(\.count)
            let slowest = answers.map(\.seconds).max() ?? 0
            print(
                "frozen \(seconds) s, SIWA_DB_TIMEOUT=\(timeout): \(kind): \(answers.count) requests, statuses \(statuses), slowest \(slowest) s"
            )
            #expect(!answers.isEmpty, "no \(kind) ran while the database was frozen")
        }
        // A second and a half of margin for a busy machine: before the budget, syncs took twice the
        // timeout and more.
        let late = frozen.filter { $0.status != 503 || $0.seconds > Double(timeout) + 1.5 }
        #expect(
            late.isEmpty,
            "answered otherwise than 503 within \(timeout) s and 1.5 s: \(late.map { "\($0.kind) \($0.status) \($0.seconds)s" })")
        let failed = thawed.filter { $0.status != 200 }
        #expect(failed.isEmpty, "before the freeze or after the thaw: \(failed.map { "\($0.kind) \($0.status)" })")
        #expect(thawed.count == threads * 8)
    }

    /// Warms `threads` workers up (each with a guest account of its own), freezes the server, runs
    /// the load for `seconds` (each thread finishes its last request before the server is thawed),
    /// thaws it and has every thread sign in, sync and refresh once more.
    /// - Returns: the answers while frozen, and those before the freeze and after the thaw.
    private func load(on server: PrivateMariaDB, timeout: Int, seconds: Double, threads: Int) throws -> (
        frozen: [Answer], thawed: [Answer]
    ) {
        let local = try HandlerHarness(
            environment: ["SIWA_DB_TIMEOUT": "\(timeout)", "SIWA_GUEST_ACCOUNTS": "true"], server: server.configuration)
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        local.clock.set(real.suggested_fixed_clock)
        let signInBody = #"{"identityToken":"\#(real.token)"}"#
        let frozen = Mutex<[Answer]>([])
        let thawed = Mutex<[Answer]>([])
        let ready = DispatchSemaphore(value: 0)
        let start = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let thaw = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        // The threads use the harness's application (Sendable) and `send(via:)` with a worker of
        // their own, never the harness's worker or connection.
        nonisolated(unsafe) let harness = local
        for index in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let worker = harness.application.makeWorker(index: index + 1)
                defer { worker.close() }
                var requests = 0
                /// Sends one request of `kind` through this thread's worker and times it.
                func send(_ kind: String, _ method: String, _ path: String, json: String? = nil, bearer: String? = nil) -> (
                    Answer, Response
                ) {
                    requests += 1
                    let started = ContinuousClock.now
                    let response = harness.send(method, path, json: json, headers: bearer.map { harness.bearer($0) } ?? [], via: worker)
                    let elapsed = (ContinuousClock.now - started).components
                    let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
                    return (Answer(kind: kind, status: response.status, seconds: seconds), response)
                }
                /// A sync that changes the user's state (a lesson not synced before).
                func sync(_ access: String) -> Answer {
                    let lesson = "t\(index)-\(requests)"
                    let body =
                        #"{"cursor":null,"progress":[{"beliefSystemId":"b","lessonId":"\#(lesson)","status":"completed","score":3}]}"#
                    return send("sync", "POST", "/sync", json: body, bearer: access).0
                }
                /// A new guest account (a sign-in: a user, a session and its refresh token), then a
                /// sync, a refresh and a native sign-in.
                func round() -> (answers: [Answer], access: String, refresh: String) {
                    let (guest, response) = send("guest", "POST", "/auth/guest")
                    let body = try? response.json()
                    let access = (try? body?.string("accessToken")) ?? "none"
                    let refresh = (try? body?.string("refreshToken")) ?? "none"
                    let (refreshed, rotated) = send("refresh", "POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#)
                    let next = (try? rotated.json().string("refreshToken")) ?? "none"
                    return ([guest, sync(access), refreshed, send("signIn", "POST", "/auth/apple", json: signInBody).0], access, next)
                }
                let (warm, access, refresh) = round()
                thawed.withLock { $0 += warm }
                ready.signal()
                start.wait()
                // Against the frozen server: the kinds in turn, each thread starting at another,
                // with the session and refresh token this thread made before.
                var answers: [Answer] = []
                let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
                var turn = index
                while ContinuousClock.now < end {
                    switch turn % 4 {
                    case 0: answers.append(sync(access))
                    case 1: answers.append(send("refresh", "POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#).0)
                    case 2: answers.append(send("guest", "POST", "/auth/guest").0)
                    default: answers.append(send("signIn", "POST", "/auth/apple", json: signInBody).0)
                    }
                    turn += 1
                }
                frozen.withLock { $0 += answers }
                finished.signal()
                thaw.wait()
                let after = round().answers
                thawed.withLock { $0 += after }
            }
        }
        for _ in 0..<threads { ready.wait() }
        server.freeze()
        for _ in 0..<threads { start.signal() }
        for _ in 0..<threads { finished.wait() }
        server.thaw()
        for _ in 0..<threads { thaw.signal() }
        done.wait()
        return (frozen.withLock { $0 }, thawed.withLock { $0 })
    }
}
