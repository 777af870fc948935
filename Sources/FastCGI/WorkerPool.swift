internal import CFastCGI
import Synchronization
package import Threads

#if canImport(Glibc)
    internal import Glibc
#endif

/// The application side of a worker thread: turns requests into responses.
///
/// One instance per worker thread, created on that thread, so it may own thread-confined resources
/// such as a database connection. It is never shared and need not be `Sendable`.
package protocol RequestHandler: AnyObject {
    /// Answers one request. Must not throw: the application maps its own errors to responses.
    func respond(to request: Request) -> Response
    /// Answers a request that could not be read (body over the limit, short body).
    func respond(toUnreadableRequest error: FastCGIError) -> Response
    /// Releases what the handler owns (explicitly, before the thread ends).
    func close()
}

/// How the worker pool reads requests.
package struct WorkerPoolConfiguration: Sendable {
    /// Number of worker threads, each serving one request at a time.
    package var threads: Int
    /// Request headers copied into `Request.headers` (others are not converted, to save time).
    package var headerNames: [String]
    /// Hard limit on a request body; larger bodies are answered through `respond(toUnreadableRequest:)`.
    package var maxBodyBytes: Int

    package init(threads: Int, headerNames: [String], maxBodyBytes: Int) {
        self.threads = threads
        self.headerNames = headerNames
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Calls `FCGX_Init` (libfcgi's process-wide set-up). Call once, in `main`, before any worker starts.
package func initializeFastCGI() {
    FCGX_Init()
}

/// A fixed pool of worker threads accepting FastCGI requests from one listener.
///
/// Each thread blocks in `accept()`, reads the whole request, calls its own `RequestHandler`, writes
/// the response and closes the connection. The threads end after `Listener.shutdown()` once the
/// queued connections are served: `join()` (or `run()`) returns then.
package final class WorkerPool: Sendable {
    private let listener: Listener
    private let configuration: WorkerPoolConfiguration
    private let makeHandler: @Sendable (Int) -> any RequestHandler
    /// The worker threads, once started.
    private let threads = Mutex<[OwnedThread]>([])

    /// - Parameters:
    ///   - listener: the socket to accept on.
    ///   - configuration: thread count and request limits.
    ///   - makeHandler: builds the handler of worker `n`, called on that worker's thread.
    package init(
        listener: Listener,
        configuration: WorkerPoolConfiguration,
        makeHandler: @escaping @Sendable (Int) -> any RequestHandler
    ) {
        self.listener = listener
        self.configuration = configuration
        self.makeHandler = makeHandler
    }

    /// Starts the workers and returns.
    /// - Throws: `FastCGIError(.threadStart)` if a thread cannot be created; the listener is then
    ///   shut down and the workers that started are joined.
    package func start() throws(FastCGIError) {
        var started: [OwnedThread] = []
        for index in 0..<configuration.threads {
            do {
                started.append(try OwnedThread(name: "siwa-worker-\(index)") { [self] _ in self.serve(worker: index) })
            } catch {
                listener.shutdown()
                for thread in started { thread.join() }
                throw FastCGIError(.threadStart, reason: "pthread_create failed", errno: error.code)
            }
        }
        threads.withLock { $0 = started }
    }

    /// Waits until every worker has stopped (after `Listener.shutdown()`).
    package func join() {
        for thread in threads.withLock({ $0 }) { thread.join() }
    }

    /// Shuts the listener down and waits until the workers have answered what was queued and
    /// stopped.
    package func stopAndJoin() {
        listener.shutdown()
        join()
    }

    /// Starts the workers and blocks until all of them have stopped.
    /// - Throws: `FastCGIError(.threadStart)` if a thread cannot be created (the others are stopped).
    package func run() throws {
        try start()
        join()
    }

    /// The pool as a service of the process: started with the others, stopped (the listener shut
    /// down, the workers joined) before those started before it.
    package var service: Service {
        Service("FastCGI workers", start: start, stop: stopAndJoin)
    }

    private func serve(worker index: Int) {
        let connection = FastCGIConnection(
            listener: listener,
            headerNames: configuration.headerNames,
            maxBodyBytes: configuration.maxBodyBytes
        )
        let handler = makeHandler(index)
        defer { handler.close() }
        while true {
            guard connection.accept() else {
                if listener.isStopping { return }
                // A failed accept that is not a shutdown (EMFILE, ECONNABORTED): back off briefly.
                usleep(10_000)
                continue
            }
            let response: Response
            do {
                response = handler.respond(to: try connection.readRequest())
            } catch let error as FastCGIError {
                response = handler.respond(toUnreadableRequest: error)
            } catch {
                response = handler.respond(toUnreadableRequest: FastCGIError(.bodyUnreadable, reason: "\(error)"))
            }
            connection.write(response)
            connection.finish()
        }
    }
}
