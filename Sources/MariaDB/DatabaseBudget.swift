internal import CMariaDB
import Threads

#if canImport(Glibc)
    import Glibc
#endif

/// The time one request may spend waiting for MariaDB, all its statements, reconnects and retries
/// together (`SIWA_DB_TIMEOUT`), kept per thread: a worker thread runs one request at a time, and
/// its connections never leave it.
///
/// Connector/C's own read and write timeouts hold for one wait each, so a request waited for each
/// statement, retry, rollback and reconnect in turn: a frozen server held a sync for twice the
/// timeout and more. Every connection installs `waitForSocket` as the library's wait for its socket
/// (`MARIADB_OPT_IO_WAIT`): each wait then ends when the thread's budget is spent, whatever wait it
/// is (a statement's answer, a handshake, a rollback), and the time it waited is taken off the
/// budget. Time spent outside the database (a call to Apple) is not counted. A thread without a
/// budget (background jobs, the session cache's poller) keeps the library's timeouts alone.
package enum DatabaseBudget {
    /// One thread's budget and stall limit.
    private struct Cell {
        /// Nanoseconds left, or `none` without a budget.
        var budget = DatabaseBudget.none
        /// The stall limit of each wait, in nanoseconds; 0 without one.
        var stallLimit: Int64 = 0
        /// Whether a wait was cut by the stall limit.
        var stallCut = false
    }

    /// Each thread's cell, made on its first use.
    private static let cell = ThreadLocal<Cell> { Cell() }

    private static let none = Int64.min

    /// Runs `body` with every wait for the server bounded by `limit` as well: a server that sends
    /// nothing for that long is taken for stalled, and the connection is closed as after a
    /// timeout. `stallCut` then tells it was this limit, not the budget or the library's timeout.
    package static func limitingStalls<T, E: Error>(to limit: Duration, _ body: () throws(E) -> T) throws(E) -> T {
        let previous = cell.withValue { cell in
            defer {
                cell.stallLimit = nanoseconds(limit)
                cell.stallCut = false
            }
            return cell.stallLimit
        }
        defer { cell.withValue { $0.stallLimit = previous } }
        return try body()
    }

    /// Whether a wait of the latest `limitingStalls` (which clears it on entry) was cut by its
    /// limit; clears it.
    package static func takeStallCut() -> Bool {
        cell.withValue { cell in
            defer { cell.stallCut = false }
            return cell.stallCut
        }
    }

    /// Runs `body` with `limit` as the thread's budget, then restores the budget it had before.
    package static func run<T, E: Error>(_ limit: Duration, _ body: () throws(E) -> T) throws(E) -> T {
        let previous = cell.withValue { cell in
            defer { cell.budget = nanoseconds(limit) }
            return cell.budget
        }
        defer { cell.withValue { $0.budget = previous } }
        return try body()
    }

    /// What is left of the thread's budget (zero when spent); nil without a budget.
    package static var remaining: Duration? {
        let left = cell.value.budget
        return left == none ? nil : .nanoseconds(max(0, left))
    }

    /// Whether the thread has a budget and has spent it.
    package static var isSpent: Bool {
        let left = cell.value.budget
        return left != none && left <= 0
    }

    /// Takes `elapsed`, spent waiting for the database outside the library (the sync committer),
    /// off the thread's budget.
    package static func spend(_ elapsed: Duration) {
        cell.withValue { cell in
            if cell.budget != none { cell.budget -= nanoseconds(elapsed) }
        }
    }

    /// The error of a call refused or cut short because the budget is spent: the database did not
    /// answer in time, which callers answer like a lost connection (503).
    package static func spentError(file: String = #fileID, line: Int = #line) -> MariaDBError {
        MariaDBError(.connectionLost, message: "the request's time for the database (SIWA_DB_TIMEOUT) is spent", file: file, line: line)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The monotonic clock, in nanoseconds.
    private static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Connector/C's wait for its socket (`pvio_socket_wait_io_or_timeout`, which calls it instead
    /// of its own `poll` for every wait of a connection: connect, handshake, reads, writes), bounded
    /// by the thread's budget as well as by `timeout` (milliseconds; -1 without one). Returns what
    /// `poll` returns: 0 (and `ETIMEDOUT`, as the library's own wait sets) on a timeout, after
    /// which the library closes the connection and reports it lost (2013).
    static let waitForSocket: @convention(c) (my_socket, my_bool, Int32) -> Int32 = { socket, isRead, timeout in
        let (budget, stallLimit) = DatabaseBudget.cell.withValue { ($0.budget, $0.stallLimit) }
        var limit = timeout > 0 ? timeout : -1
        if budget != DatabaseBudget.none {
            guard budget > 0 else {
                errno = ETIMEDOUT
                return 0
            }
            // Rounded up, so that a budget of less than a millisecond still polls.
            let left = Int32(clamping: (budget + 999_999) / 1_000_000)
            limit = limit < 0 ? left : min(limit, left)
        }
        var stallBinds = false
        if stallLimit > 0 {
            let stall = Int32(clamping: (stallLimit + 999_999) / 1_000_000)
            if limit < 0 || stall < limit {
                limit = stall
                stallBinds = true
            }
        }
        var descriptor = pollfd(fd: socket, events: Int16(isRead != 0 ? POLLIN : POLLOUT), revents: 0)
        let started = DatabaseBudget.now()
        var result: Int32
        repeat {
            result = poll(&descriptor, 1, limit)
        } while result == -1 && errno == EINTR
        let waited = DatabaseBudget.now() - started
        DatabaseBudget.cell.withValue { cell in
            if cell.budget != DatabaseBudget.none { cell.budget -= waited }
            if result == 0, stallBinds { cell.stallCut = true }
        }
        if result == 0 { errno = ETIMEDOUT }
        return result
    }
}
