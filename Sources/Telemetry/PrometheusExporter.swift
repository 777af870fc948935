package import CoreMetrics
import Foundation
import Prometheus
import Synchronization

/// The process's metrics in Prometheus' text format: everything recorded through swift-metrics
/// once `factory` is the metrics system's (`siwa serve` bootstraps it), plus the process's own
/// resident memory, CPU time and open files, read from `/proc` at each scrape.
package final class PrometheusExporter: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let process: ProcessMetrics

    package init() {
        process = ProcessMetrics(registry: registry)
    }

    /// The swift-metrics factory that records into this exporter, with siwa's histogram buckets.
    package var factory: any MetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = MetricNames.durationBuckets
        factory.valueHistogramBuckets = MetricNames.valueBuckets
        return factory
    }

    /// The exposition (`text/plain; version=0.0.4`), with the process metrics read now.
    package func render() -> [UInt8] {
        process.update()
        return registry.emitToBuffer()
    }

    /// The media type of `render()`'s output.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// The standard `process_*` metrics of Prometheus' client libraries, from Linux's `/proc/self`.
private final class ProcessMetrics: Sendable {
    private let residentMemory: Prometheus.Gauge
    private let virtualMemory: Prometheus.Gauge
    private let openFiles: Prometheus.Gauge
    private let maximumFiles: Prometheus.Gauge
    private let startTime: Prometheus.Gauge
    private let cpuSeconds: Prometheus.Counter
    /// The CPU seconds already added to the counter, which only grows by increments.
    private let cpuCounted = Mutex<Double>(0)

    init(registry: PrometheusCollectorRegistry) {
        func descriptor(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "process", metricName: name, unitName: unit, helpText: help)
        }
        residentMemory = registry.makeGauge(descriptor: descriptor("resident_memory", "bytes", "Resident memory size in bytes."))
        virtualMemory = registry.makeGauge(descriptor: descriptor("virtual_memory", "bytes", "Virtual memory size in bytes."))
        openFiles = registry.makeGauge(descriptor: descriptor("open", "fds", "Number of open file descriptors."))
        maximumFiles = registry.makeGauge(descriptor: descriptor("max", "fds", "Maximum number of open file descriptors."))
        startTime = registry.makeGauge(
            descriptor: descriptor("start_time", "seconds", "Start time of the process since the Unix epoch in seconds."))
        cpuSeconds = registry.makeCounter(
            descriptor: descriptor("cpu_seconds", "total", "Total user and system CPU time spent in seconds."))
    }

    func update() {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            // The fields after the command name, which is in parentheses and may hold spaces.
            let end = stat.lastIndex(of: ")")
        else { return }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // fields[0] is field 3 of proc(5): utime is 14, stime 15, starttime 22, vsize 23, rss 24.
        func field(_ number: Int) -> Double { fields.count > number - 3 ? Double(fields[number - 3]) ?? 0 : 0 }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        residentMemory.set(field(24) * pageSize)
        virtualMemory.set(field(23))
        let cpu = (field(14) + field(15)) / ticks
        cpuCounted.withLock { counted in
            if cpu > counted {
                cpuSeconds.increment(by: cpu - counted)
                counted = cpu
            }
        }
        if let bootTime = Self.bootTime { startTime.set(bootTime + field(22) / ticks) }
        if let files = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") { openFiles.set(Double(files.count)) }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maximumFiles.set(Double(limit.rlim_cur)) }
    }

    /// The system's boot time in Unix seconds (`btime` in `/proc/stat`).
    private static let bootTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return stat.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }()
}
