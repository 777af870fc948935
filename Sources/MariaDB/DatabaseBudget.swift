internal import CMariaDB

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
    /// The thread's budget: nanoseconds left, or `Int64.min` without a budget.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { $0?.assumingMemoryBound(to: Int64.self).deallocate() }
        return key
    }()

    private static let none = Int64.min

    /// The thread's cell, made on first use: the budget, then the stall limit of each wait
    /// (nanoseconds, 0 without one) and whether a wait was cut by it (1).
    private static var cell: UnsafeMutablePointer<Int64> {
        if let pointer = pthread_getspecific(key) { return pointer.assumingMemoryBound(to: Int64.self) }
        let cell = UnsafeMutablePointer<Int64>.allocate(capacity: 3)
        cell.initialize(to: none)
        (cell + 1).initialize(to: 0)
        (cell + 2).initialize(to: 0)
        pthread_setspecific(key, cell)
        return cell
    }

    /// Runs `body` with every wait for the server bounded by `limit` as well: a server that sends
    /// nothing for that long is taken for stalled, and the connection is closed as after a
    /// timeout. `stallCut` then tells it was this limit, not the budget or the library's timeout.
    package static func limitingStalls<T, E: Error>(to limit: Duration, _ body: () throws(E) -> T) throws(E) -> T {
        let cell = self.cell
        let previous = cell[1]
        cell[1] = nanoseconds(limit)
        cell[2] = 0
        defer { cell[1] = previous }
        return try body()
    }

    /// Whether a wait of the latest `limitingStalls` (which clears it on entry) was cut by its
    /// limit; clears it.
    package static func takeStallCut() -> Bool {
        let cell = self.cell
        defer { cell[2] = 0 }
        return cell[2] != 0
    }

    /// Runs `body` with `limit` as the thread's budget, then restores the budget it had before.
    package static func run<T, E: Error>(_ limit: Duration, _ body: () throws(E) -> T) throws(E) -> T {
        let cell = self.cell
        let previous = cell.pointee
        cell.pointee = nanoseconds(limit)
        defer { cell.pointee = previous }
        return try body()
    }

    /// What is left of the thread's budget (zero when spent); nil without a budget.
    package static var remaining: Duration? {
        let left = cell.pointee
        return left == none ? nil : .nanoseconds(max(0, left))
    }

    /// Whether the thread has a budget and has spent it.
    package static var isSpent: Bool {
        let left = cell.pointee
        return left != none && left <= 0
    }

    /// Takes `elapsed`, spent waiting for the database outside the library (the sync committer),
    /// off the thread's budget.
    package static func spend(_ elapsed: Duration) {
        let cell = self.cell
        if cell.pointee != none { cell.pointee -= nanoseconds(elapsed) }
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
        let cell = DatabaseBudget.cell
        var limit = timeout > 0 ? timeout : -1
        if cell.pointee != DatabaseBudget.none {
            guard cell.pointee > 0 else {
                errno = ETIMEDOUT
                return 0
            }
            // Rounded up, so that a budget of less than a millisecond still polls.
            let left = Int32(clamping: (cell.pointee + 999_999) / 1_000_000)
            limit = limit < 0 ? left : min(limit, left)
        }
        var stallBinds = false
        if cell[1] > 0 {
            let stall = Int32(clamping: (cell[1] + 999_999) / 1_000_000)
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
        if cell.pointee != DatabaseBudget.none { cell.pointee -= DatabaseBudget.now() - started }
        if result == 0 {
            errno = ETIMEDOUT
            if stallBinds { cell[2] = 1 }
        }
        return result
    }
}
