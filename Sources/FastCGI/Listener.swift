internal import CFastCGI
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// The listening unix socket that nginx connects to, shared by every worker thread.
///
/// Wraps the file descriptor from `FCGX_OpenSocket`. `shutdown()` stops accepting without closing the
/// descriptor: on Linux every thread blocked in `accept()` returns at once, while connections already
/// in the backlog can still be accepted and served (docs/PERFORMANCE.md, "libfcgi and SIGTERM").
package final class Listener: Sendable {
    /// The listening descriptor; owned, closed in `deinit`.
    let descriptor: Int32
    /// The socket path, removed again in `deinit`.
    package let path: String
    private let stopping = Atomic<Bool>(false)

    /// Opens the unix socket at `path` (replacing a stale socket file) and sets its permissions.
    /// - Parameters:
    ///   - path: the socket file to create.
    ///   - mode: file permissions, such as `0o660` (nginx must be able to connect).
    ///   - backlog: the listen backlog; connections beyond busy workers wait here.
    /// - Throws: `FastCGIError(.socketUnavailable)`.
    package init(path: String, mode: UInt32, backlog: Int32) throws {
        var status = stat()
        if lstat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFSOCK else {
                throw FastCGIError(.socketUnavailable, reason: "\(path) exists and is not a socket")
            }
            unlink(path)
        }
        let descriptor = FCGX_OpenSocket(path, backlog)
        guard descriptor >= 0 else {
            throw FastCGIError(.socketUnavailable, reason: "cannot listen on \(path)", errno: errno)
        }
        guard chmod(path, mode_t(mode)) == 0 else {
            let code = errno
            close(descriptor)
            throw FastCGIError(.socketUnavailable, reason: "cannot chmod \(path)", errno: code)
        }
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// True once `shutdown()` was called: an accept failure then means "stop", not "retry".
    package var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Stops accepting new connections; queued connections are still served. Safe to call twice.
    package func shutdown() {
        stopping.store(true, ordering: .releasing)
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RD))
    }
}
