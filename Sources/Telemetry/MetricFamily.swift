package import CoreMetrics
import Synchronization

/// The metrics of one name with label values known only at run time: one swift-metrics metric per
/// combination of values, made through the factory on first use and kept.
///
/// Making a metric through swift-metrics costs a factory call (for Prometheus, label checks and a
/// lookup under the registry's lock) each time; a family makes each combination once, so that a
/// request pays one dictionary lookup, without a lock: the combinations made so far are an
/// immutable table, replaced by a larger one (under `tables`' lock) when a combination is new.
/// Every table stays alive as long as the family, so a reader never holds one that was freed;
/// the label values are route names, statuses and outcomes, a few dozen combinations at most.
/// (Behind a `Mutex`, the lookup of every request was where `perf` found worker threads waiting
/// under load: Swift's `Mutex` on Linux hands the lock to a sleeping waiter.)
package final class MetricFamily<Metric: AnyObject & Sendable>: Sendable {
    private final class Table: Sendable {
        let metrics: [[String]: Metric]

        init(_ metrics: [[String]: Metric]) { self.metrics = metrics }
    }

    private let labelNames: [String]
    private let make: @Sendable ([(String, String)]) -> Metric
    /// The latest table, read without a lock.
    private let latest: Atomic<Unmanaged<Table>>
    /// Every table made, the latest last: they keep each other alive for `latest`'s readers.
    private let tables: Mutex<[Table]>

    private init(labelNames: [String], make: @escaping @Sendable ([(String, String)]) -> Metric) {
        self.labelNames = labelNames
        self.make = make
        let empty = Table([:])
        latest = Atomic(Unmanaged.passUnretained(empty))
        tables = Mutex([empty])
    }

    /// The metric with these label values, in the order of the family's label names.
    package subscript(_ values: String...) -> Metric { metric(values) }

    /// The metric with these label values, in the order of the family's label names.
    package func metric(_ values: [String]) -> Metric {
        precondition(values.count == labelNames.count, "\(labelNames.count) label values expected")
        if let metric = latest.load(ordering: .acquiring).takeUnretainedValue().metrics[values] { return metric }
        return tables.withLock { tables in
            var metrics = tables[tables.count - 1].metrics
            if let metric = metrics[values] { return metric }
            let made = make(Array(zip(labelNames, values)))
            metrics[values] = made
            let table = Table(metrics)
            tables.append(table)
            latest.store(Unmanaged.passUnretained(table), ordering: .releasing)
            return made
        }
    }
}

extension MetricFamily where Metric == Counter {
    /// Counters named `name`, labelled `labels`.
    package convenience init(counter name: String, labels: [String], factory: any MetricsFactory = MetricsSystem.factory) {
        self.init(labelNames: labels) { Counter(label: name, dimensions: $0, factory: factory) }
    }
}

extension MetricFamily where Metric == CoreMetrics.Timer {
    /// Duration histograms named `name`, labelled `labels` (their buckets: `MetricNames.durationBuckets`).
    package convenience init(timer name: String, labels: [String], factory: any MetricsFactory = MetricsSystem.factory) {
        self.init(labelNames: labels) { CoreMetrics.Timer(label: name, dimensions: $0, factory: factory) }
    }
}

extension CoreMetrics.Timer {
    /// Records the time since `start`.
    package func recordSince(_ start: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - start).components
        recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}

extension MetricFamily where Metric == Gauge {
    /// Gauges named `name`, labelled `labels`.
    package convenience init(gauge name: String, labels: [String], factory: any MetricsFactory = MetricsSystem.factory) {
        self.init(labelNames: labels) { Gauge(label: name, dimensions: $0, factory: factory) }
    }
}
