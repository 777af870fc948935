import AccountData
import CoreMetrics
package import FastCGI
package import Identity
import Logging
package import Telemetry

/// `GET /metrics`: the process's metrics in Prometheus' text format, for a scraper on the host
/// (nginx serves the location to loopback only; docs/OPERATIONS.md). Before rendering it reads
/// what no event counts: the outboxes' backlogs and the oldest rows of the tables that grow (a
/// query each, every term an index's first entry or an outbox's waiting rows), how far behind the
/// daily check of Apple's tokens is (another), and the age of Apple's keys; whether those reads
/// succeeded (`siwa_database_up`) and how long they took (`siwa_database_read_seconds`).
package struct MetricsEndpoint: Sendable {
    private let exporter: PrometheusExporter
    private let outboxDepth: MetricFamily<Gauge>
    private let outboxDue: MetricFamily<Gauge>
    private let outboxOldestAge: MetricFamily<Gauge>
    private let retentionOldestAge: MetricFamily<Gauge>
    private let appleKeysAge: Gauge
    private let validationOverdue: Gauge
    private let validationsDue: Gauge
    private let databaseUp: Gauge
    private let databaseReadDuration: Gauge

    package init(exporter: PrometheusExporter) {
        self.exporter = exporter
        let factory = exporter.factory
        outboxDepth = MetricFamily(gauge: MetricNames.outboxDepth, labels: ["outbox"], factory: factory)
        outboxDue = MetricFamily(gauge: MetricNames.outboxDue, labels: ["outbox"], factory: factory)
        outboxOldestAge = MetricFamily(gauge: MetricNames.outboxOldestAge, labels: ["outbox"], factory: factory)
        retentionOldestAge = MetricFamily(gauge: MetricNames.retentionOldestAge, labels: ["table"], factory: factory)
        appleKeysAge = Gauge(label: MetricNames.appleKeysAge, factory: factory)
        validationOverdue = Gauge(label: MetricNames.appleValidationOverdue, factory: factory)
        validationsDue = Gauge(label: MetricNames.appleValidationsDue, factory: factory)
        databaseUp = Gauge(label: MetricNames.databaseUp, factory: factory)
        databaseReadDuration = Gauge(label: MetricNames.databaseReadDuration, factory: factory)
    }

    /// The route, an operator's: not part of the HTTP contract (docs/openapi.yaml).
    package var route: Route { Route("GET", "/metrics", handle) }

    package func handle(_ request: Request, _ context: RouteContext, _ useCases: UseCases) -> Response {
        let start = ContinuousClock.now
        var read = true
        do {
            for backlog in try useCases.status.outboxBacklogs() {
                outboxDepth[backlog.outbox].record(backlog.depth)
                outboxDue[backlog.outbox].record(backlog.due)
                outboxOldestAge[backlog.outbox].record(backlog.oldestAge)
            }
            for (table, age) in try useCases.status.retentionAges() { retentionOldestAge[table].record(age) }
        } catch {
            read = false
            // The scrape still answers, with siwa_database_up 0; the database errors counter and /health tell the rest.
            useCases.context.logger.warning(
                "metrics: the outboxes or the tables that grow could not be read", metadata: ["error": "\(error)"])
        }
        do {
            let validations = try useCases.status.validationBacklog()
            validationOverdue.record(validations.overdueSeconds)
            validationsDue.record(validations.due)
        } catch {
            read = false
            useCases.context.logger.warning("metrics: the validation backlog could not be read", metadata: ["error": "\(error)"])
        }
        let elapsed = (ContinuousClock.now - start).components
        databaseReadDuration.record(Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        databaseUp.record(read ? 1 : 0)
        appleKeysAge.record(useCases.status.appleKeysAge ?? -1)
        return Response(
            status: 200, contentType: PrometheusExporter.contentType, headers: [("Cache-Control", "no-store")], body: exporter.render())
    }
}
