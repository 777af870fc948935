import Foundation
import MariaDB
import SIWATestSupport
import Testing

/// A cluster's node choice, on the test server: listed twice, it is a cluster of two, and a unix
/// socket path that appears later is a node that comes back.
@Suite final class ClusterNodesTests {
    let database: TestDatabase

    init() throws { database = try TestDatabase() }

    deinit { database.drop() }

    @Test("What a node says of itself: synced only when Galera is off, or the node is Synced in a primary component and ready")
    func nodeStates() {
        #expect(NodeState(wsrepOn: "0", ready: "OFF", localState: "0", clusterStatus: "Disconnected") == .synced)
        #expect(NodeState(wsrepOn: "1", ready: "ON", localState: "4", clusterStatus: "Primary") == .synced)
        #expect(NodeState(wsrepOn: "1", ready: "ON", localState: "2", clusterStatus: "Primary") == .ready)
        #expect(NodeState(wsrepOn: "1", ready: "ON", localState: "3", clusterStatus: "Primary") == .ready)
        #expect(NodeState(wsrepOn: "1", ready: "ON", localState: "4", clusterStatus: "non-Primary") == .ready)
        #expect(NodeState(wsrepOn: "1", ready: "OFF", localState: "1", clusterStatus: "Primary") == .notReady)
        #expect(NodeState(wsrepOn: "1", ready: nil, localState: nil, clusterStatus: nil) == .notReady)
    }

    @Test(
        "A connection that failed over returns to its first node once that node has answered synced for the hysteresis, between transactions"
    )
    func failBack() throws {
        let real = database.configuration.endpoint
        guard case .unixSocket(let socket) = real else {
            Issue.record("the test server is not on a unix socket: \(real)")
            return
        }
        let link = NSTemporaryDirectory() + "siwa-node-\(UUID().uuidString).sock"
        defer { try? FileManager.default.removeItem(atPath: link) }
        var cluster = database.configuration
        cluster.endpoints = [.unixSocket(path: link), real]
        cluster.nodes = ClusterNodes(configuration: cluster, failBackAfter: .seconds(2), checkInterval: .milliseconds(50))
        defer { cluster.nodes?.stop() }
        let connection = Connection(configuration: cluster)
        defer { connection.close() }

        // The first node is down: the second serves, and stays while the first is still down.
        _ = try connection.query("SELECT 1")
        #expect(connection.server == real)
        _ = try connection.query("SELECT 1")
        #expect(connection.server == real)

        // The first node comes back: not at once (the hysteresis), and then between transactions
        // only: both statements of a transaction run on one node.
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: socket)
        _ = try connection.query("SELECT 1")
        #expect(connection.server == real)
        var switchedInside = false
        let back = try eventually(within: 10) {
            try connection.transaction {
                _ = try connection.query("SELECT 1")
                let first = connection.server
                Thread.sleep(forTimeInterval: 0.06)
                _ = try connection.query("SELECT 1")
                if connection.server != first { switchedInside = true }
            }
            return connection.server == .unixSocket(path: link)
        }
        #expect(back)
        #expect(!switchedInside)
        #expect(try connection.query("SELECT 1").count == 1)
    }

    @Test(
        "On a cluster, a statement whose node sends nothing for 3 s is cut short, and its transaction counts as rolled back: nothing of it is kept"
    )
    func stalledStatement() throws {
        var cluster = database.configuration
        cluster.endpoints = [cluster.endpoint, cluster.endpoint]
        let connection = Connection(configuration: cluster)
        defer { connection.close() }
        let observer = try database.connect()
        defer { observer.close() }
        try observer.run("CREATE TABLE stalls (id INT PRIMARY KEY)")
        do {
            try connection.transaction {
                _ = try connection.execute("INSERT INTO stalls VALUES (1)")
                _ = try connection.query("SELECT SLEEP(6)")
            }
            Issue.record("a statement of 6 s was not cut short")
        } catch let error as MariaDBError {
            #expect(error.code == .connectionLost)
            #expect(error.rolledBackTransaction)
        }
        // The server rolls the transaction back once it sees the connection gone (at the end of
        // the SLEEP at the latest): then the same row can be written by another, which a committed
        // or still open transaction would prevent.
        let written = eventually(within: 20) {
            (try? observer.execute("INSERT INTO stalls VALUES (1)")) != nil
        }
        #expect(written)
        #expect(try connection.query("SELECT COUNT(*) FROM stalls").first?.decode(Int.self, at: 0) == 1)
    }
}
