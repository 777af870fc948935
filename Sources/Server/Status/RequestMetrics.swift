package import CoreMetrics
import Telemetry

/// Requests in the process's metrics: answered by route and status, their durations by route, and
/// the worker threads busy answering one.
package struct RequestMetrics: Sendable {
    private let requests: MetricFamily<Counter>
    private let durations: MetricFamily<CoreMetrics.Timer>
    /// Worker threads answering a request now.
    let busyWorkers: Meter

    /// - Parameters:
    ///   - workers: the process's worker threads, exported as `siwa_workers`.
    ///   - factory: where the metrics go.
    package init(workers: Int, factory: any MetricsFactory) {
        requests = MetricFamily(counter: MetricNames.requests, labels: ["route", "status"], factory: factory)
        durations = MetricFamily(timer: MetricNames.requestDuration, labels: ["route"], factory: factory)
        busyWorkers = Meter(label: MetricNames.busyWorkers, factory: factory)
        Gauge(label: MetricNames.workers, factory: factory).record(workers)
    }

    /// Counts a request to `route` answered with `status`, begun at `start`.
    func answered(route: String, status: Int, since start: ContinuousClock.Instant) {
        requests[route, String(status)].increment()
        durations[route].recordSince(start)
    }
}
