import Foundation
import Threads

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 for tests of HTTP clients: one connection at a time (or,
/// `concurrent`, each on a thread of its own), `Connection: close`, the response chosen by a handler.
// `@unchecked Sendable`: the recorded requests and the connections' threads are only touched with
// `received` locked; the rest is immutable.
public final class TestHTTPServer: @unchecked Sendable {
    public struct Request: Sendable {
        public let method: String
        public let path: String
        /// Lowercased names.
        public let headers: [String: String]
        public let body: [UInt8]
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]
        /// Seconds to wait before answering (to test timeouts).
        public var delay: Double
        /// Closes the connection with a reset instead of answering.
        public var resetsConnection = false
        /// Closes the connection (FIN) instead of answering.
        public var closesConnection = false

        /// No answer: the connection is reset, as by a server that went away mid-request.
        public static let connectionReset: Response = {
            var response = Response(status: 0)
            response.resetsConnection = true
            return response
        }()

        /// No answer: the connection is closed, as nginx closes a kept-alive connection on reload.
        public static let connectionClosed: Response = {
            var response = Response(status: 0)
            response.closesConnection = true
            return response
        }()

        public init(status: Int, headers: [(String, String)] = [], body: String = "", delay: Double = 0) {
            self.status = status
            self.headers = headers
            self.body = Array(body.utf8)
            self.delay = delay
        }
    }

    public let port: Int
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    private let socket: Int32
    private let handler: @Sendable (Request) -> Response
    /// The serving thread, joined by `stop()`.
    private var thread: OwnedThread?
    private let received = NSLock()
    private var requests: [Request] = []
    /// Whether each connection is served on a thread of its own.
    private let concurrent: Bool
    /// The connections' threads (`concurrent`), joined by `stop()`.
    private var connections: [OwnedThread] = []

    /// Starts listening; the server thread runs until `stop()`.
    /// - Parameter concurrent: serve each connection on a thread of its own, so that the handler
    ///   sees requests in flight together (it must then be safe to call from several threads).
    public init(concurrent: Bool = false, handler: @escaping @Sendable (Request) -> Response) throws {
        self.concurrent = concurrent
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0, listen(socket, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.socket = socket
        self.handler = handler
        thread = try OwnedThread(name: "test-http") { [self] _ in serve() }
    }

    /// Every request received so far.
    public var receivedRequests: [Request] {
        received.lock()
        defer { received.unlock() }
        return requests
    }

    /// Stops accepting connections and waits for the serving thread to end.
    public func stop() {
        // Only shut down: the serving thread closes the descriptor once its accept fails, so the
        // number cannot be reused by another socket while that thread still accepts on it.
        shutdown(socket, Int32(SHUT_RDWR))
        thread?.join()
        received.lock()
        let threads = connections
        connections = []
        received.unlock()
        for thread in threads { thread.join() }
    }

    private func serve() {
        while true {
            let client = accept(socket, nil, nil)
            if client < 0 {
                close(socket)
                return
            }
            guard concurrent else {
                handle(client)
                close(client)
                continue
            }
            let thread = try? OwnedThread(name: "test-http-conn") { [self] _ in
                handle(client)
                close(client)
            }
            if let thread {
                received.lock()
                connections.append(thread)
                received.unlock()
            } else {
                close(client)
            }
        }
    }

    private func handle(_ client: Int32) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            let count = read(client, &buffer, buffer.count)
            if count <= 0 { return }
            data.append(contentsOf: buffer[..<count])
            if headerEnd == nil, let range = findHeaderEnd(data) {
                headerEnd = range
                let head = String(decoding: data[..<range], as: UTF8.self)
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if let headerEnd, data.count >= headerEnd + 4 + contentLength { break }
        }
        let end = headerEnd!
        let lines = String(decoding: data[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let request = Request(
            method: String(requestLine[0]), path: String(requestLine[1]), headers: headers,
            body: Array(data[(end + 4)..<(end + 4 + contentLength)]))
        received.lock()
        requests.append(request)
        received.unlock()
        let response = handler(request)
        if response.delay > 0 { Thread.sleep(forTimeInterval: response.delay) }
        if response.resetsConnection {
            // A zero linger time makes close() send RST instead of FIN.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return
        }
        if response.closesConnection { return }
        var head = "HTTP/1.1 \(response.status) X\r\nContent-Length: \(response.body.count)\r\nConnection: close\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + response.body
        _ = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }

    private func findHeaderEnd(_ data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for index in 0...(data.count - 4) where data[index] == 13 && data[index + 1] == 10 && data[index + 2] == 13 && data[index + 3] == 10
        {
            return index
        }
        return nil
    }
}
