internal import CMariaDB
import Synchronization
import Threads

/// What a Galera node says of itself: whether it may be given work.
package enum NodeState: Equatable, Sendable {
    /// Synced with a primary component (`wsrep_local_state` 4), or a server without Galera.
    case synced
    /// Answers statements, but is not synced: a donor or a node catching up (`wsrep_ready` ON).
    case ready
    /// Refuses statements (1047): joining, or cut off from the primary component.
    case notReady

    /// The query that tells, one row: `wsrep_on`, `wsrep_ready`, `wsrep_local_state` and
    /// `wsrep_cluster_status`. A node that refuses other statements still answers it (it reads
    /// only `information_schema`).
    static let query = """
        SELECT @@GLOBAL.wsrep_on, MAX(IF(VARIABLE_NAME = 'WSREP_READY', VARIABLE_VALUE, NULL)), \
        MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_STATE', VARIABLE_VALUE, NULL)), \
        MAX(IF(VARIABLE_NAME = 'WSREP_CLUSTER_STATUS', VARIABLE_VALUE, NULL)) \
        FROM information_schema.GLOBAL_STATUS \
        WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_LOCAL_STATE', 'WSREP_CLUSTER_STATUS')
        """

    /// The state of the server `mysql` is connected to, read over the text protocol.
    /// - Throws: `MariaDBError` when the server does not answer.
    static func read(_ mysql: UnsafeMutablePointer<MYSQL>) throws -> NodeState {
        let status = query.withCString { mysql_real_query(mysql, $0, UInt(query.utf8.count)) }
        guard status == 0, let result = mysql_store_result(mysql) else { throw MariaDBError(connection: mysql) }
        defer { mysql_free_result(result) }
        guard let row = mysql_fetch_row(result) else { return .notReady }
        let column = { (index: Int) in row[index].map { String(cString: $0) } }
        return NodeState(wsrepOn: column(0), ready: column(1), localState: column(2), clusterStatus: column(3))
    }

    /// The state from the node's `wsrep_on`, `wsrep_ready`, `wsrep_local_state` and
    /// `wsrep_cluster_status`.
    package init(wsrepOn: String?, ready: String?, localState: String?, clusterStatus: String?) {
        if wsrepOn != "1" {
            self = .synced
        } else if ready != "ON" {
            self = .notReady
        } else if localState == "4" && clusterStatus == "Primary" {
            self = .synced
        } else {
            self = .ready
        }
    }
}

/// The nodes of a Galera cluster as the process sees them, for the connections that moved off
/// their first node: which of the nodes before theirs has been synced long enough to go back to.
///
/// A connection that lost its node (or found it not synced) uses the next one of its list; once
/// the nodes before it answer again, it returns to the first of them that has been synced in
/// every check for `failBackAfter` (the hysteresis: a node that comes and goes draws no load back
/// and forth). One thread per process checks the nodes, every `checkInterval`, on connections of
/// its own, and only while some connection is away from its first node and asks: requests never
/// wait for a check, and a cluster whose connections are all on their first nodes costs no
/// connection. The thread starts on the first question and is joined by `stop()`.
package final class ClusterNodes: Sendable {
    private struct State {
        /// Per node: since when every check found it synced (nil: the last check did not).
        var syncedSince: [ContinuousClock.Instant?]
        /// Per node: no connection returns to it before then (a connection left it).
        var heldOffUntil: [ContinuousClock.Instant?]
        /// When a connection last asked: the checks stop some seconds after the last question.
        var askedAt: ContinuousClock.Instant?
        var started = false
        var stopped = false
    }

    /// The nodes, in the configuration's order of preference.
    package let endpoints: [Configuration.Endpoint]
    /// How long a node must be seen synced before connections return to it.
    package let failBackAfter: Duration
    /// Time between two checks of the nodes.
    package let checkInterval: Duration
    private let settings: Configuration
    private let state: Mutex<State>
    private let checker = Mutex<OwnedThread?>(nil)

    /// - Parameters:
    ///   - configuration: the cluster's nodes (`endpoints`) and how to connect to them.
    ///   - failBackAfter: how long a node must be seen synced before connections return to it.
    ///   - checkInterval: time between two checks.
    package init(configuration: Configuration, failBackAfter: Duration = .seconds(3), checkInterval: Duration = .milliseconds(500)) {
        endpoints = configuration.endpoints
        self.failBackAfter = failBackAfter
        self.checkInterval = checkInterval
        var settings = configuration
        settings.nodes = nil
        settings.syncWait = 0
        settings.autocommit = true
        settings.connectTimeout = 1
        settings.readWriteTimeout = 2
        self.settings = settings
        let count = configuration.endpoints.count
        state = Mutex(State(syncedSince: Array(repeating: nil, count: count), heldOffUntil: Array(repeating: nil, count: count)))
    }

    /// The first node before `index` that has been synced for `failBackAfter`, for a connection on
    /// node `index`; nil when none is (yet). Starts the checks when they are not running.
    package func preferred(before index: Int) -> Int? {
        let now = ContinuousClock.now
        let (answer, start) = state.withLock { state -> (Int?, Bool) in
            guard !state.stopped else { return (nil, false) }
            state.askedAt = now
            let answer = state.syncedSince.indices.prefix(index).first { node in
                state.syncedSince[node].map { now - $0 >= failBackAfter } ?? false
                    && state.heldOffUntil[node].map { now >= $0 } ?? true
            }
            let start = !state.started
            state.started = true
            return (answer, start)
        }
        if start {
            // Started lazily, by the first connection that asks. Without the thread (logged and
            // counted) no node is ever seen synced: connections stay where they are.
            let thread = OwnedThread.startIfPossible(name: "siwa-db-nodes") { [self] context in check(context) }
            checker.withLock { $0 = thread }
            // A `stop()` in between did not see the thread: it is stopped here.
            if state.withLock({ $0.stopped }) { thread?.stopAndJoin() }
        }
        return answer
    }

    /// Tells that a connection left node `index`: it must be seen synced for `failBackAfter` again
    /// before connections return to it, and, when it stalled a statement while its status said
    /// synced, for `stallHoldOff` at least (a node that answers the checks but not the statements
    /// would draw connections back into a stall every few seconds).
    package func left(_ index: Int, stalled: Bool) {
        let now = ContinuousClock.now
        state.withLock { state in
            guard state.syncedSince.indices.contains(index) else { return }
            state.syncedSince[index] = nil
            if stalled { state.heldOffUntil[index] = now + ClusterNodes.stallHoldOff }
        }
    }

    /// How long no connection returns to a node that stalled a statement.
    package static let stallHoldOff: Duration = .seconds(30)

    /// Stops the checks and waits until their thread has closed its connections and ended.
    package func stop() {
        state.withLock { $0.stopped = true }
        checker.withLock { $0 }?.stopAndJoin()
    }

    /// The checks' loop: while connections ask (within the last 10 s), each node but the last is
    /// checked every `checkInterval`; otherwise the thread's connections are closed and it waits.
    private func check(_ context: OwnedThread.Context) {
        let probes = endpoints.map { endpoint in
            var single = settings
            single.endpoints = [endpoint]
            return single
        }
        var connections: [Connection?] = Array(repeating: nil, count: endpoints.count)
        defer { for connection in connections { connection?.close() } }
        let interval = Double(checkInterval.components.seconds) + Double(checkInterval.components.attoseconds) / 1e18
        while !context.isStopping {
            let asked = state.withLock { $0.askedAt.map { ContinuousClock.now - $0 < .seconds(10) } ?? false }
            if asked {
                for index in endpoints.indices.dropLast() {
                    let connection = connections[index] ?? Connection(configuration: probes[index])
                    connections[index] = connection
                    let synced = (try? connection.nodeState()) == .synced
                    if !synced { connection.close() }
                    let now = ContinuousClock.now
                    state.withLock { state in
                        state.syncedSince[index] = synced ? (state.syncedSince[index] ?? now) : nil
                    }
                }
            } else {
                for connection in connections { connection?.close() }
                state.withLock { state in state.syncedSince = state.syncedSince.map { _ in nil } }
            }
            context.waitForStop(timeout: interval)
        }
    }
}
