internal import CMariaDB
internal import CoreMetrics
import Threads

/// Calls `mysql_library_init` (not thread-safe). Call once, in `main`, before any thread connects.
package func initializeMariaDBLibrary() {
    _ = CMariaDB_library_init()
}

/// One MariaDB connection with its cache of prepared statements.
///
/// Owns the `MYSQL` handle; close it with `close()`. Confined to one thread (one connection per
/// worker thread); not `Sendable`.
///
/// Reconnection is explicit (docs/PERFORMANCE.md, "MariaDB reconnects"; `MYSQL_OPT_RECONNECT` would silently roll back an open
/// transaction). When the server goes away the connection is dropped and re-opened, and its statements
/// prepared again, on the next call. A read is retried once at once. A write is retried once only when
/// the library reports that the statement never reached the server; a write inside a transaction is
/// never retried (the transaction fails with `.connectionLost`), except the first statement of a
/// transaction without autocommit, which nothing on the server outlives. Nothing is retried after a loss that
/// took time to notice (a read or write timeout: the server is frozen or overloaded), so a call
/// fails within the configured timeout instead of waiting for it twice.
///
/// On a thread with a `DatabaseBudget` (a worker's request), every wait of the connection ends
/// when the budget is spent; once it is, the connection sends nothing more: no statement, retry
/// or connect, and a transaction that fails is closed with its connection instead of rolled back
/// (the server rolls it back). Docs/OPERATIONS.md, "A database that stops answering".
package final class Connection {
    /// Where and how it connects: another thread opens its own connection with the same settings.
    package let configuration: Configuration
    private var handle: UnsafeMutablePointer<MYSQL>?
    private var statements: [String: PreparedStatement] = [:]
    private var inTransaction = false
    /// Whether the open transaction has begun on the server: lost with the connection, it cannot be
    /// resumed on another. Without autocommit its first statement begins it.
    private var transactionBegun = false
    /// Whether a statement of the open transaction changed a row (then the server must still
    /// have the transaction open at COMMIT).
    private var transactionWrote = false
    /// Whether the latest lost connection was noticed at once (the server closed it), rather than
    /// after a timeout (a frozen server, which a second try would wait for again).
    private var lossNoticedAtOnce = false
    /// Changing statements of the open transaction queued by `executeWithNext`, in order.
    private var queuedWrites: [(sql: String, values: [Value])] = []
    /// Whether a connection was open before, so that the next connect is a reconnect.
    private var connectedBefore = false
    /// The number of the server session in use, counting from 1: every (re)connect opens a new
    /// one. `run(_:inSession:)` sends only to the session a caller started with.
    package private(set) var session = 0
    private let metrics = ConnectionMetrics()
    /// When set, every statement given to `query`, `execute`, `executeWithNext` and `executeBatch`
    /// is recorded in it (`StatementRecorder`); nil, as it is outside tests, costs a nil check.
    package var statementRecorder: StatementRecorder?

    /// The index in `configuration.endpoints` of the server the next connect tries first: the one
    /// that answered last, or the one after a server that was lost.
    private var endpointIndex = 0

    /// Session settings applied on every (re)connect: UTC times and strict data checks, the
    /// configuration's commit mode, and causal reads when configured.
    private var initCommand: SQL {
        var command: SQL =
            "SET SESSION time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
            + "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
        if !configuration.autocommit { command = command + ", autocommit = 0" }
        // A number of the configuration: the init command binds nothing.
        if configuration.syncWait > 0 { command = command + ", wsrep_sync_wait = \(raw: String(configuration.syncWait))" }
        return command
    }

    /// Whether each statement commits by itself: autocommit, and no transaction open.
    package var commitsEachStatement: Bool { configuration.autocommit && !inTransaction }

    /// The server this connection uses (or will try first).
    package var server: Configuration.Endpoint { configuration.endpoints[endpointIndex] }

    /// Creates a connection that opens on first use, so a worker starts even while the server is down.
    /// - Parameter configuration: where and how to connect.
    package init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// A connection nobody closed is closed here, in every build configuration, so that a missed
    /// `close()` never leaks the handle or leaves the server to notice a vanished client.
    deinit {
        disconnect()
    }

    /// Closes the connection and its statements. Further calls reconnect.
    package func close() {
        disconnect()
    }

    /// Checks that the server answers (`mysql_ping`, a COM_PING round trip: no statement to execute).
    /// Reconnects once when the connection was lost, like a read.
    /// - Throws: `MariaDBError(.connectionLost)` when the server cannot be reached.
    package func ping() throws {
        returnToPreferredNode()
        let started = ContinuousClock.now
        try recordingFailures {
            do {
                try pingOnce()
            } catch let error as MariaDBError where error.code == .connectionLost {
                dropServer()
                guard !inTransaction, Connection.noticedAtOnce(since: started) else { throw error }
                try pingOnce()
            }
        }
    }

    /// Checks that the server answers statements: `SELECT 1`, which a Galera node out of the
    /// cluster refuses (1047) although it answers a ping, so that the connection moves on to the
    /// next server of its list.
    package func checkAnswersStatements() throws {
        _ = try query("SELECT 1")
    }

    /// What the server says of itself (`NodeState`): whether a Galera node is synced.
    /// - Throws: `MariaDBError` when the server cannot be reached.
    package func nodeState() throws -> NodeState {
        try NodeState.read(try connected())
    }

    /// Moves a connection that left its first node back to an earlier node of its list once that
    /// one has been synced for a while (`ClusterNodes`), between transactions only: the next
    /// statement connects there.
    private func returnToPreferredNode() {
        guard endpointIndex > 0, !inTransaction, let nodes = configuration.nodes,
            let preferred = nodes.preferred(before: endpointIndex)
        else { return }
        disconnect()
        endpointIndex = preferred
        metrics.failBacks.increment()
    }

    private func pingOnce() throws {
        let mysql = try connected()
        guard mysql_ping(mysql) == 0 else { throw failure(mysql) }
    }

    /// Runs a reading statement and returns its rows. Retried once if the connection was lost outside
    /// a transaction.
    /// - Parameters:
    ///   - sql: the statement, with its values bound by interpolation or given as `binds`.
    ///   - binds: the values of a statement that interpolates none, one per `?`.
    /// - Throws: `MariaDBError`; `.misuse` for a statement with values both interpolated and given.
    ///   - file: the caller's file, for `statementRecorder`.
    ///   - line: the caller's line, for `statementRecorder`.
    package func query(
        _ sql: SQL, _ binds: any DatabaseValueConvertible..., file: StaticString = #fileID, line: UInt = #line
    ) throws -> [Row] {
        try query(sql, binds: binds, file: file, line: line)
    }

    /// `query(_:_:)` with the binds as an array.
    package func query(
        _ sql: SQL, binds: [any DatabaseValueConvertible], file: StaticString = #fileID, line: UInt = #line
    ) throws -> [Row] {
        let values = try sql.values(trailing: binds)
        statementRecorder?.record(sql.text, values, file: file, line: line)
        return try perform(sql.text, values, returnsRows: true, retryAnyLoss: true).rows
    }

    /// Runs a changing statement (INSERT, UPDATE, DELETE, DDL) and returns what it changed.
    /// - Parameters:
    ///   - sql: the statement, with its values bound by interpolation or given as `binds`.
    ///   - binds: the values of a statement that interpolates none, one per `?`.
    /// - Throws: `MariaDBError`; `.misuse` for a statement with values both interpolated and given.
    ///   - file: the caller's file, for `statementRecorder`.
    ///   - line: the caller's line, for `statementRecorder`.
    package func execute(
        _ sql: SQL, _ binds: any DatabaseValueConvertible..., file: StaticString = #fileID, line: UInt = #line
    ) throws -> ExecutionResult {
        try execute(sql, binds: binds, file: file, line: line)
    }

    /// `execute(_:_:)` with the binds as an array.
    package func execute(
        _ sql: SQL, binds: [any DatabaseValueConvertible], file: StaticString = #fileID, line: UInt = #line
    ) throws -> ExecutionResult {
        let values = try sql.values(trailing: binds)
        statementRecorder?.record(sql.text, values, file: file, line: line)
        let result = try perform(sql.text, values, returnsRows: false, retryAnyLoss: false).result
        if inTransaction && result.affectedRows > 0 { transactionWrote = true }
        return result
    }

    /// Queues a changing statement of the open transaction whose result nobody reads, to be sent
    /// with the transaction's next statement, or with its COMMIT: the queued statements and that
    /// one go in one round trip, as one compound statement (`BEGIN NOT ATOMIC ... END`) prepared
    /// once per connection for each sequence of statements. A round trip costs MariaDB and siwa
    /// more CPU than a short INSERT does (docs/PERFORMANCE.md, "Sign-in"). Outside a transaction,
    /// the statement runs at once.
    /// - Throws: `MariaDBError` when it runs at once. In a transaction the statement's error is
    ///   thrown later, by the call that sends it, and fails the transaction like any error.
    /// - Parameters:
    ///   - sql: the statement, with its values bound by interpolation or given as `binds`.
    ///   - binds: the values of a statement that interpolates none, one per `?`.
    ///   - file: the caller's file, for `statementRecorder`.
    ///   - line: the caller's line, for `statementRecorder`.
    package func executeWithNext(
        _ sql: SQL, _ binds: any DatabaseValueConvertible..., file: StaticString = #fileID, line: UInt = #line
    ) throws {
        try executeWithNext(sql, binds: binds, file: file, line: line)
    }

    /// `executeWithNext(_:_:)` with the binds as an array.
    package func executeWithNext(
        _ sql: SQL, binds: [any DatabaseValueConvertible], file: StaticString = #fileID, line: UInt = #line
    ) throws {
        guard inTransaction else {
            _ = try execute(sql, binds: binds, file: file, line: line)
            return
        }
        let values = try sql.values(trailing: binds)
        statementRecorder?.record(sql.text, values, file: file, line: line)
        queuedWrites.append((sql.text, values))
    }

    /// Runs a changing statement once for each of `rows` (each row its binds), all in one round trip
    /// (MariaDB's array binding); an `INSERT` of one row's placeholders so writes all the rows. Not
    /// retried once it may have reached the server, like `execute`. No rows: nothing is sent.
    /// - Parameters:
    ///   - sql: one row's statement, without interpolated values.
    ///   - rows: each row's values, one per `?`.
    ///   - file: the caller's file, for `statementRecorder`.
    ///   - line: the caller's line, for `statementRecorder`.
    /// - Returns: the rows changed by all of them together.
    /// - Throws: `MariaDBError`; when any row fails, the statement fails as a whole; `.misuse` for a
    ///   statement with interpolated values.
    package func executeBatch(
        _ sql: SQL, rows: [[any DatabaseValueConvertible]], file: StaticString = #fileID, line: UInt = #line
    ) throws -> ExecutionResult {
        guard sql.binds.isEmpty else { throw MariaDBError(.misuse, message: "a batch's values are its rows, not interpolated") }
        try requireCommitMode()
        guard !rows.isEmpty else { return ExecutionResult(affectedRows: 0, lastInsertID: 0) }
        try sendQueuedWrites()
        let values = rows.map { $0.map(\.databaseValue) }
        statementRecorder?.record(sql.text, values[0], file: file, line: line)
        let result = try recordingFailures { try retryingLoss(anyLoss: false) { try statement(for: sql.text).executeBatch(values) } }
        if inTransaction && result.affectedRows > 0 { transactionWrote = true }
        return result
    }

    /// Runs SQL text without binds over the text protocol, several statements when the configuration
    /// allows them (migrations). Result sets are discarded.
    /// - Parameters:
    ///   - statements: the text, without interpolated values (the text protocol binds none).
    ///   - session: when given, the text is sent only while that server session (`session`) is
    ///     still open: a lost connection is not reopened for it, so that nothing a caller started
    ///     in one session (a migration under its lease) goes on in another.
    /// - Throws: `MariaDBError` of the first failing statement; `.connectionLost` when `session` is
    ///   no longer the open one; `.misuse` for interpolated values.
    package func run(_ statements: SQL, inSession session: Int? = nil) throws {
        guard statements.binds.isEmpty else { throw MariaDBError(.misuse, message: "the text protocol binds no values") }
        try run(text: statements.text, inSession: session)
    }

    private func run(text sql: String, inSession session: Int?) throws {
        try sendQueuedWrites()
        let mysql: UnsafeMutablePointer<MYSQL>
        if let session {
            guard let handle, self.session == session else {
                throw MariaDBError(.connectionLost, errno: 2006, message: "the server session \(session) is no longer open")
            }
            mysql = handle
        } else {
            mysql = try connected()
        }
        let status = sql.withCString { mysql_real_query(mysql, $0, UInt(sql.utf8.count)) }
        guard status == 0 else { throw failure(mysql) }
        while true {
            if let result = mysql_store_result(mysql) {
                mysql_free_result(result)
            } else if mysql_field_count(mysql) != 0 {
                throw failure(mysql)
            }
            let next = mysql_next_result(mysql)
            if next == -1 { return }
            if next > 0 { throw failure(mysql) }
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws. Without
    /// autocommit, the first statement of `body` starts it.
    /// - Throws: what `body` throws, or `MariaDBError` from BEGIN/COMMIT; `.misuse` when nested;
    ///   `.deadlock` when the server rolled back a transaction that changed rows before its COMMIT;
    ///   `.connectionLost` marked `rolledBackTransaction` when the connection was lost (and noticed
    ///   at once) before the COMMIT was sent.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        guard !inTransaction else { throw MariaDBError(.misuse, message: "nested transaction") }
        returnToPreferredNode()
        // Only a loss in this transaction tells whether it was rolled back.
        lossNoticedAtOnce = false
        if configuration.autocommit { try command("START TRANSACTION", retryable: true) }
        inTransaction = true
        transactionBegun = configuration.autocommit
        transactionWrote = false
        defer {
            inTransaction = false
            queuedWrites.removeAll()
        }
        let value: T
        do {
            value = try body()
            try requireOpenTransaction()
        } catch var error as MariaDBError where error.code == .connectionLost {
            queuedWrites.removeAll()
            rollBack()
            error.rolledBackTransaction = lossNoticedAtOnce
            throw error
        } catch {
            queuedWrites.removeAll()
            rollBack()
            throw error
        }
        do {
            if queuedWrites.isEmpty {
                try command("COMMIT", retryable: false)
            } else {
                try sendQueuedWrites(then: .commit)
            }
            return value
        } catch {
            rollBack()
            throw error
        }
    }

    /// Rolls the failed transaction back; with the thread's budget spent, closes the connection
    /// instead (the server rolls back a closed connection's transaction), so that a failed request
    /// waits for no ROLLBACK of a server that stopped answering.
    private func rollBack() {
        guard let handle else { return }
        if DatabaseBudget.isSpent {
            disconnect()
        } else {
            mysql_rollback(handle)
        }
    }

    // MARK: - Internals

    /// Runs `sql`, after the queued writes when there are any.
    private func perform(_ sql: String, _ values: [Value], returnsRows: Bool, retryAnyLoss: Bool) throws -> (
        rows: [Row], result: ExecutionResult
    ) {
        try requireCommitMode()
        returnToPreferredNode()
        guard !queuedWrites.isEmpty else {
            return try recordingFailures { try retryingLoss(anyLoss: retryAnyLoss) { try statement(for: sql).execute(values) } }
        }
        let executed = try sendQueuedWrites(then: returnsRows ? .read(sql, values) : .change(sql, values))
        guard !returnsRows else { return executed }
        guard let row = executed.rows.first else { throw MariaDBError(.misuse, message: "a compound statement returned no status") }
        return (
            [],
            ExecutionResult(affectedRows: try row.decode(column: "affected_rows"), lastInsertID: try row.decode(column: "last_insert_id"))
        )
    }

    /// What a compound statement of queued writes ends with.
    private enum Ending {
        /// A reading statement, whose rows are the compound statement's result.
        case read(String, [Value])
        /// A changing statement, followed by a SELECT of its `ROW_COUNT()` and `LAST_INSERT_ID()`
        /// (set to 0 before it, so that it is 0 when the statement generated no id).
        case change(String, [Value])
        /// The transaction's COMMIT.
        case commit
        case nothing
    }

    /// Sends the queued writes (taken off the queue) and then `ending`, as one compound statement.
    /// Before a COMMIT it checks that the server still has the transaction open when a statement of
    /// it changed rows (see `requireOpenTransaction`): otherwise the queued writes would begin a new
    /// transaction, and the COMMIT would keep them alone.
    @discardableResult
    private func sendQueuedWrites(then ending: Ending = .nothing) throws -> (rows: [Row], result: ExecutionResult) {
        guard !queuedWrites.isEmpty else { return ([], ExecutionResult(affectedRows: 0, lastInsertID: 0)) }
        var statements = queuedWrites.map(\.sql)
        var binds = queuedWrites.flatMap(\.values)
        queuedWrites.removeAll()
        switch ending {
        case .read(let sql, let values):
            statements.append(sql)
            binds += values
        case .change(let sql, let values):
            statements += ["DO LAST_INSERT_ID(0)", sql, "SELECT ROW_COUNT() AS affected_rows, LAST_INSERT_ID() AS last_insert_id"]
            binds += values
        case .commit:
            if transactionWrote {
                statements.insert(
                    "IF @@in_transaction = 0 THEN SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, "
                        + "MESSAGE_TEXT = 'the server rolled the transaction back'; END IF", at: 0)
            }
            statements.append("COMMIT")
        case .nothing:
            break
        }
        if inTransaction { transactionWrote = true }
        let sql = "BEGIN NOT ATOMIC " + statements.joined(separator: "; ") + "; END"
        let commits: Bool = if case .commit = ending { true } else { false }
        return try recordingFailures { try retryingLoss(anyLoss: false, commits: commits) { try statement(for: sql).execute(binds) } }
    }

    /// Runs `body`, counting the database error it throws (`ConnectionMetrics`).
    private func recordingFailures<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as MariaDBError {
            metrics.failed(error)
            throw error
        }
    }

    /// Runs `body` (one statement), again once on a new connection when the connection was lost outside
    /// a transaction and running it again is safe: when it cannot have reached the server, or for
    /// `anyLoss`, a read.
    private func retryingLoss<T>(anyLoss: Bool, commits: Bool = false, _ body: () throws -> T) throws -> T {
        let started = ContinuousClock.now
        do {
            let value = try limitingStalls(commits: commits, body)
            if inTransaction { transactionBegun = true }
            return value
        } catch let error as MariaDBError where error.code == .connectionLost {
            // Read only where this statement's waits were limited (which cleared it first): a cut of
            // an earlier wait, a connect's, says nothing of this statement.
            let stalled = stallsLimited(commits: commits) && DatabaseBudget.takeStallCut()
            dropServer(stalled: stalled)
            // A stalled node was left at once too: the next try goes to another node.
            lossNoticedAtOnce = Connection.noticedAtOnce(since: started) || stalled
            // Without autocommit, a transaction's first statement begins it: when its connection is
            // lost, the server keeps nothing of it, so it runs again on a new one like a read. Not a
            // COMMIT's: what it sent may have been committed.
            let nothingBegun = inTransaction && !transactionBegun && !commits
            let safe = nothingBegun || (!inTransaction && (anyLoss || Connection.neverReachedServer(error)))
            guard safe, lossNoticedAtOnce else { throw error }
            return try limitingStalls(commits: commits, body)
        }
    }

    /// Whether a statement's waits are bounded by `clusterStall`: on a cluster, but not a COMMIT.
    private func stallsLimited(commits: Bool) -> Bool {
        configuration.endpoints.count > 1 && !commits
    }

    /// Runs `body` (one statement) with, on a cluster, each wait for its answer bounded by
    /// `clusterStall`: a node that answers nothing for that long is left like a lost one (the
    /// transaction, rolled back by the server as its connection closes, may run again on another
    /// node). A COMMIT is not cut short: its outcome would be unknown either way.
    private func limitingStalls<T>(commits: Bool, _ body: () throws -> T) throws -> T {
        guard stallsLimited(commits: commits) else { return try body() }
        return try DatabaseBudget.limitingStalls(to: Connection.clusterStall, body)
    }

    /// The longest a statement on a cluster waits for its node to send something. Galera's view
    /// changes pause every node for about 1.5 s (50_galera.sh, with deploy/galera/galera.cnf); in
    /// the same test a transaction's statement sometimes waited for a node that was rejoining
    /// until the request's whole time was spent (10 s).
    static let clusterStall: Duration = .seconds(3)

    /// Checks that the server still has this connection's transaction open. On a Galera cluster a
    /// replicated write can abort a local transaction between its statements (a brute-force
    /// abort); 50_galera.sh saw such a transaction's later statements and its COMMIT answered OK,
    /// with nothing of it kept. The server's status flags tell: its transaction is gone.
    /// - Throws: `MariaDBError(.deadlock)`, which callers retry like any conflict.
    private func requireOpenTransaction() throws {
        guard transactionWrote, let handle, handle.pointee.server_status & UInt32(SERVER_STATUS_IN_TRANS) == 0 else { return }
        throw MariaDBError(.deadlock, errno: 1213, sqlState: "40001", message: "the server rolled the transaction back")
    }

    /// Without autocommit a statement outside `transaction` would leave a transaction open.
    private func requireCommitMode() throws {
        guard configuration.autocommit || inTransaction else {
            throw MariaDBError(.misuse, message: "a connection without autocommit runs statements only inside a transaction")
        }
    }

    private func command(_ sql: String, retryable: Bool) throws {
        let started = ContinuousClock.now
        try recordingFailures {
            do {
                try run(text: sql, inSession: nil)
            } catch let error as MariaDBError where error.code == .connectionLost {
                dropServer()
                lossNoticedAtOnce = Connection.noticedAtOnce(since: started)
                guard retryable, !inTransaction, lossNoticedAtOnce else { throw error }
                try run(text: sql, inSession: nil)
            }
        }
    }

    /// Whether a loss was noticed within a second of `start`: a connection the server closed (it
    /// restarted), worth one more try; not a timeout, after which a second try would double the wait.
    private static func noticedAtOnce(since start: ContinuousClock.Instant) -> Bool {
        ContinuousClock.now - start < .seconds(1)
    }

    /// Errors after which the statement cannot have been executed: the connection was refused, the
    /// request could not be written (2006), the server forgot the statement after a restart (1243),
    /// or a Galera node out of the cluster refused it (1047).
    private static func neverReachedServer(_ error: MariaDBError) -> Bool {
        [2002, 2003, 2006, 1243, 1047].contains(error.errno)
    }

    private func statement(for sql: String) throws -> PreparedStatement {
        // Nothing more is sent once the request's budget is spent: a statement sent to a frozen
        // server would still run when it wakes, after the caller was told it failed.
        if DatabaseBudget.isSpent { throw DatabaseBudget.spentError() }
        if let statement = statements[sql] { return statement }
        let statement = try PreparedStatement(connection: try connected(), sql: sql)
        statements[sql] = statement
        return statement
    }

    private func connected() throws -> UnsafeMutablePointer<MYSQL> {
        if DatabaseBudget.isSpent { throw DatabaseBudget.spentError() }
        if let handle { return handle }
        if inTransaction && transactionBegun {
            throw MariaDBError(.connectionLost, errno: 2006, message: "connection lost inside a transaction")
        }
        try connect()
        return handle!
    }

    /// Connects to the servers in turn, from `endpointIndex`, until one accepts or the thread's
    /// budget is spent. Of several servers (a Galera cluster), the first that is synced is taken:
    /// a node that is joining or cut off refuses statements (1047), and a donor or a node still
    /// catching up makes them wait. When none is synced, the first that answers statements is.
    /// - Throws: the last server's failure.
    private func connect() throws {
        let count = configuration.endpoints.count
        var failure: (any Error)?
        var fallback: (handle: UnsafeMutablePointer<MYSQL>, index: Int)?
        defer { if let fallback, fallback.handle != handle { mysql_close(fallback.handle) } }
        for offset in 0..<count {
            if DatabaseBudget.isSpent { break }
            let index = (endpointIndex + offset) % count
            do {
                let mysql = try connect(to: configuration.endpoints[index])
                let state: NodeState
                do {
                    state = count > 1 ? try NodeState.read(mysql) : .synced
                } catch {
                    mysql_close(mysql)
                    throw MariaDBError(.connectionLost, errno: 2013, message: "\(configuration.endpoints[index]): \(error)")
                }
                if state == .synced {
                    use(mysql, index: index)
                    return
                }
                if state == .ready && fallback == nil {
                    fallback = (mysql, index)
                } else {
                    mysql_close(mysql)
                    failure = MariaDBError(
                        .connectionLost, errno: 1047, sqlState: "08S01",
                        message: "\(configuration.endpoints[index]) is not a synced node of the cluster")
                }
            } catch {
                failure = error
            }
        }
        if let fallback, !DatabaseBudget.isSpent {
            use(fallback.handle, index: fallback.index)
            return
        }
        throw failure ?? DatabaseBudget.spentError()
    }

    private func use(_ mysql: UnsafeMutablePointer<MYSQL>, index: Int) {
        handle = mysql
        endpointIndex = index
        if connectedBefore { metrics.reconnects.increment() }
        connectedBefore = true
        session += 1
    }

    /// Opens a connection to `endpoint`.
    private func connect(to endpoint: Configuration.Endpoint) throws -> UnsafeMutablePointer<MYSQL> {
        guard let mysql = mysql_init(nil) else {
            fatalError("mysql_init failed: out of memory")
        }
        // The library's timeouts are the ceiling of each wait (and all a thread without a budget
        // has); `DatabaseBudget.waitForSocket` ends every wait when the thread's budget is spent.
        // The connect timeout is also the whole-seconds limit of the one wait the hook does not
        // see: a unix socket whose listen queue is full is retried in a loop (connect() answers
        // EAGAIN) until that many seconds passed, so it is the budget left when that is shorter.
        var connectTimeout = UInt32(configuration.connectTimeout)
        if let remaining = DatabaseBudget.remaining {
            let (seconds, attoseconds) = remaining.components
            connectTimeout = min(connectTimeout, UInt32(clamping: max(1, seconds + (attoseconds > 0 ? 1 : 0))))
        }
        var ioTimeout = UInt32(configuration.readWriteTimeout)
        var reconnect: my_bool = 0
        mysql_options(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connectTimeout)
        mysql_options(mysql, MYSQL_OPT_READ_TIMEOUT, &ioTimeout)
        mysql_options(mysql, MYSQL_OPT_WRITE_TIMEOUT, &ioTimeout)
        mysql_options(mysql, MYSQL_OPT_RECONNECT, &reconnect)
        mysql_options(mysql, MARIADB_OPT_IO_WAIT, unsafeBitCast(DatabaseBudget.waitForSocket, to: UnsafeRawPointer.self))
        _ = "utf8mb4".withCString { mysql_options(mysql, MYSQL_SET_CHARSET_NAME, $0) }
        _ = initCommand.text.withCString { mysql_options(mysql, MYSQL_INIT_COMMAND, $0) }

        let flags: UInt = configuration.allowsMultipleStatements ? UInt(CLIENT_MULTI_STATEMENTS) : 0
        var host: String?
        var port: UInt32 = 0
        var socket: String?
        switch endpoint {
        case .unixSocket(let path):
            socket = path
            host = "localhost"
        case .tcp(let name, let number):
            host = name
            port = UInt32(number)
        }
        let connected = withOptionalCString(host) { host in
            withOptionalCString(socket) { socket in
                withOptionalCString(configuration.password) { password in
                    withOptionalCString(configuration.database) { database in
                        mysql_real_connect(mysql, host, configuration.user, password, database, port, socket, flags)
                    }
                }
            }
        }
        guard connected != nil else {
            let error = failure(mysql)
            mysql_close(mysql)
            // Every connect failure means "the database is unavailable" to the caller.
            throw MariaDBError(.connectionLost, errno: error.errno, sqlState: error.sqlState, message: error.message)
        }
        return mysql
    }

    private func disconnect() {
        statements.removeAll()
        if let handle { mysql_close(handle) }
        handle = nil
    }

    /// Drops a connection whose server was lost or is not ready: the next connect tries the next
    /// server first.
    private func dropServer(stalled: Bool = false) {
        disconnect()
        configuration.nodes?.left(endpointIndex, stalled: stalled)
        endpointIndex = (endpointIndex + 1) % configuration.endpoints.count
    }

    private func failure(_ mysql: UnsafeMutablePointer<MYSQL>, file: String = #fileID, line: Int = #line) -> MariaDBError {
        MariaDBError(connection: mysql, file: file, line: line)
    }
}

/// The connection's counters in the process's metrics system: database errors by kind
/// (`siwa_database_errors_total`), reconnects (`siwa_database_reconnects_total`) and returns to an
/// earlier node of a cluster (`siwa_database_fail_backs_total`).
private struct ConnectionMetrics {
    let reconnects: Counter
    let failBacks: Counter
    private let errors: [String: Counter]

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        reconnects = Counter(label: "siwa_database_reconnects_total", factory: factory)
        failBacks = Counter(label: "siwa_database_fail_backs_total", factory: factory)
        errors = Dictionary(
            uniqueKeysWithValues: ["connection_lost", "deadlock", "lock_wait_timeout", "duplicate_entry", "statement_failed", "other"].map {
                ($0, Counter(label: "siwa_database_errors_total", dimensions: [("kind", $0)], factory: factory))
            })
    }

    func failed(_ error: MariaDBError) {
        let kind =
            switch error.code {
            case .connectionLost: "connection_lost"
            case .deadlock: "deadlock"
            case .lockWaitTimeout: "lock_wait_timeout"
            case .duplicateEntry: "duplicate_entry"
            case .statementFailed: "statement_failed"
            case .typeMismatch, .misuse: "other"
            }
        errors[kind]?.increment()
    }
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString(body)
}

/// A thread that owns a connection closes it when it ends.
extension Connection: ThreadOwnedResource {}
