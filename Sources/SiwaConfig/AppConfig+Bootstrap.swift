import CoreMetrics
package import Logging
package import Telemetry

extension AppConfig {
    /// Sends the process's logs to standard error in the configured format, and returns a logger
    /// at the configured level. Call once, before any other thread logs.
    package func bootstrapLogging(label: String) -> Logger {
        switch logFormat {
        case .text: LoggingSystem.bootstrap(StreamLogHandler.standardError)
        case .json: LoggingSystem.bootstrap { JSONLogHandler(label: $0) }
        }
        var logger = Logger(label: label)
        logger.logLevel = logLevel
        return logger
    }

    /// When metrics are on, makes every metric of the process go to one exporter (what `GET /metrics`
    /// renders) and returns it; nil when they are off. Call once, before any metric is made.
    package func bootstrapMetrics() -> PrometheusExporter? {
        guard metricsEnabled else { return nil }
        let exporter = PrometheusExporter()
        MetricsSystem.bootstrap(exporter.factory)
        return exporter
    }
}
