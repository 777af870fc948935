import FastCGI
import Foundation
import SIWATestSupport
import Synchronization
import Testing
import Threads

/// Holds `/slow` requests until the test opens it, counting those that arrived.
private final class Gate: @unchecked Sendable {
    static let shared = Gate()
    // `arrived` and `isOpen` are guarded by `condition`.
    private let condition = NSCondition()
    private var arrived = 0
    private var isOpen = false

    func pass() {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        while !isOpen { condition.wait() }
    }

    var arrivals: Int {
        condition.lock()
        defer { condition.unlock() }
        return arrived
    }

    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }
}

/// Answers with the request's fields as text; `/slow` first waits at the gate.
private final class EchoHandler: RequestHandler {
    func respond(to request: Request) -> Response {
        if request.path == "/slow" { Gate.shared.pass() }
        if request.path == "/queued" { return Response(status: 200, body: Array("\(request.queued / .milliseconds(1))".utf8)) }
        let text = [
            request.method, request.path, request.query, request.headers["authorization"] ?? "-",
            request.headers["x-not-captured"] ?? "-", request.headers["content-type"] ?? "-",
            String(decoding: request.body, as: UTF8.self),
        ].joined(separator: "|")
        return Response(status: 200, contentType: "text/plain", headers: [("X-Echo", "1")], body: Array(text.utf8))
    }

    func respond(toUnreadableRequest error: FastCGIError) -> Response {
        Response(status: error.code == .bodyTooLarge ? 413 : 400, body: Array("\(error.code)".utf8))
    }

    func close() {}
}

/// A worker pool on a socket in a fresh temporary directory, stopped by `stop()`.
private final class RunningPool: Sendable {
    let socketPath: String
    let listener: Listener
    private let thread: OwnedThread

    init(threads: Int, maxBodyBytes: Int = 1024) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcgi-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socketPath = directory + "/test.sock"
        initializeFastCGI()
        let listener = try Listener(path: socketPath, mode: 0o600, backlog: 128)
        self.listener = listener
        let pool = WorkerPool(
            listener: listener,
            configuration: WorkerPoolConfiguration(
                threads: threads, headerNames: ["authorization", "content-type"], maxBodyBytes: maxBodyBytes)
        ) { _ in EchoHandler() }
        thread = try OwnedThread(name: "test-pool") { _ in try? pool.run() }
    }

    var client: FastCGIClient { FastCGIClient(socketPath: socketPath) }

    func stop() {
        listener.shutdown()
        thread.join()
    }
}

@Suite struct WorkerPoolTests {
    @Test("A request's method, path, query, captured headers and body reach the handler")
    func readsRequest() throws {
        let pool = try RunningPool(threads: 2)
        defer { pool.stop() }
        let answer = try pool.client.send(
            method: "POST", uri: "/auth/apple?x=1&y=2",
            headers: ["Authorization": "Bearer abc", "X-Not-Captured": "secret", "Content-Type": "application/json"],
            body: Array(#"{"a":1}"#.utf8))
        #expect(answer.status == 200)
        #expect(answer.headers["x-echo"] == "1")
        #expect(answer.headers["content-length"] == String(answer.body.count))
        #expect(answer.text == #"POST|/auth/apple|x=1&y=2|Bearer abc|-|application/json|{"a":1}"#)
    }

    @Test(
        "The time since nginx sent the request (REQUEST_QUEUED_AT, its $msec) reaches the handler; zero without it or when it does not fit")
    func queuedTime() throws {
        let pool = try RunningPool(threads: 1)
        defer { pool.stop() }
        func queued(_ value: String?) throws -> Double {
            let answer = try pool.client.send(method: "GET", uri: "/queued", parameters: value.map { ["REQUEST_QUEUED_AT": $0] } ?? [:])
            return Double(answer.text) ?? -1
        }
        let now = Date().timeIntervalSince1970
        // Half an hour ago, read within a minute: a step of the machine's clock between the two
        // readings (a virtual machine's clock is set back by seconds at times) moves it by less.
        let waited = try queued(String(format: "%.3f", now - 1800))
        #expect(abs(waited - 1_800_000) < 60_000, "waited \(waited) ms")
        #expect(try queued(nil) == 0)
        #expect(try queued("soon") == 0)
        #expect(try queued(String(format: "%.3f", now + 60)) == 0)
        #expect(try queued(String(format: "%.3f", now - 7200)) == 0)
    }

    @Test("A body over the limit is refused with 413, whether declared or only sent")
    func bodyLimit() throws {
        let pool = try RunningPool(threads: 1, maxBodyBytes: 1024)
        defer { pool.stop() }
        let declared = try pool.client.send(method: "POST", uri: "/", body: [], declaredLength: 5000)
        #expect(declared.status == 413)
        let undeclared = try pool.client.send(
            method: "POST", uri: "/", body: [UInt8](repeating: 65, count: 4000), declaredLength: 100)
        #expect(undeclared.status == 413)
        let exact = try pool.client.send(method: "POST", uri: "/", body: [UInt8](repeating: 65, count: 1024))
        #expect(exact.status == 200)
        // The worker keeps serving after refusing.
        #expect(try pool.client.send(method: "GET", uri: "/after").status == 200)
    }

    @Test("Shutdown finishes the requests in flight and queued, then the pool stops")
    func gracefulStop() throws {
        let pool = try RunningPool(threads: 4)
        let statuses = Mutex<[Int]>([])
        let sent = Atomic<Int>(0)
        var clients: [OwnedThread] = []
        for _ in 0..<12 {
            clients.append(
                try OwnedThread(name: "test-client") { _ in
                    let answer = try? pool.client.send(method: "GET", uri: "/slow") { sent.add(1, ordering: .relaxed) }
                    statuses.withLock { $0.append(answer?.status ?? -1) }
                })
        }
        // All 12 sent: 4 held by the workers at the gate, 8 waiting in the listen queue.
        #expect(eventually(within: 10) { sent.load(ordering: .relaxed) == 12 && Gate.shared.arrivals == 4 })
        pool.listener.shutdown()
        Gate.shared.open()
        pool.stop()
        for client in clients { client.join() }
        // The requests in flight and the 8 queued ones were all answered, none dropped.
        #expect(statuses.withLock { $0 } == [Int](repeating: 200, count: 12))
        #expect(Gate.shared.arrivals == 12)
        #expect(throws: FastCGIClient.ClientError.self) { try pool.client.send(method: "GET", uri: "/") }
    }

    @Test("The header block starts with Status and carries the content type of a body and the length")
    func headerBlock() {
        let response = Response(status: 201, headers: [("Location", "/x")], body: Array("{}".utf8))
        #expect(
            String(decoding: response.headerBlock(), as: UTF8.self)
                == "Status: 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\nLocation: /x\r\n\r\n")
        #expect(String(decoding: Response(status: 204).headerBlock(), as: UTF8.self) == "Status: 204 No Content\r\n\r\n")
        // A redirect has no body, so no content type.
        #expect(
            String(decoding: Response(status: 303, headers: [("Location", "/x")]).headerBlock(), as: UTF8.self)
                == "Status: 303 See Other\r\nContent-Length: 0\r\nLocation: /x\r\n\r\n")
    }
}
