import Identity
import Testing

/// The connections each process holds, as docs/OPERATIONS.md's table sums them.
@Suite struct DatabaseConnectionsTests {
    @Test("siwa serve: two per worker thread, the committers', the poller's, a node checker's per node of a cluster")
    func serve() {
        #expect(DatabaseConnections.serve(workerThreads: 64, databaseNodes: 1) == 131)
        #expect(DatabaseConnections.serve(workerThreads: 16, databaseNodes: 3) == 38)
    }

    @Test("siwa jobs: its own, four per webhook endpoint, a node checker's per node of a cluster")
    func jobs() {
        #expect(DatabaseConnections.jobs(webhookEndpoints: 0, validationLanes: 16, databaseNodes: 1) == 17)
        #expect(DatabaseConnections.jobs(webhookEndpoints: 2, validationLanes: 4, databaseNodes: 3) == 16)
    }
}
