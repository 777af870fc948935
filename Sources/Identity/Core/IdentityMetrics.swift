import Accounts
import AppleID
package import CoreMetrics
import MariaDB
import Telemetry

/// The use cases' counters in the process's metrics system (docs/OPERATIONS.md lists them): sign-ins,
/// refreshes, Apple's notifications, syncs and fetches of Apple's keys.
package struct IdentityMetrics: Sendable {
    let signIns: MetricFamily<Counter>
    let refreshes: MetricFamily<Counter>
    let notifications: MetricFamily<Counter>
    let syncRequests: MetricFamily<Counter>
    let syncRowsWritten: Counter
    let syncCursorsRefused: Counter
    let syncBatchSize: Recorder
    let syncCacheHits: Counter
    let syncCacheMisses: Counter
    let keyFetches: MetricFamily<Counter>

    /// - Parameter factory: where the metrics go; by default the metrics system's (none until
    ///   `siwa serve` bootstraps it).
    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        signIns = MetricFamily(counter: MetricNames.signIns, labels: ["flow", "result"], factory: factory)
        refreshes = MetricFamily(counter: MetricNames.refreshes, labels: ["result"], factory: factory)
        notifications = MetricFamily(counter: MetricNames.notifications, labels: ["type", "outcome"], factory: factory)
        syncRequests = MetricFamily(counter: MetricNames.syncRequests, labels: ["result"], factory: factory)
        syncRowsWritten = Counter(label: MetricNames.syncRowsWritten, factory: factory)
        syncCursorsRefused = Counter(label: MetricNames.syncCursorsRefused, factory: factory)
        syncBatchSize = Recorder(label: MetricNames.syncBatchSize, factory: factory)
        syncCacheHits = Counter(label: MetricNames.syncCacheLookups, dimensions: [("result", "hit")], factory: factory)
        syncCacheMisses = Counter(label: MetricNames.syncCacheLookups, dimensions: [("result", "miss")], factory: factory)
        keyFetches = MetricFamily(counter: MetricNames.appleKeyFetches, labels: ["result"], factory: factory)
    }

    /// Counts a sync's lookup of the user's state in the sync cache: found (`hit`) or not.
    var syncCacheLookup: @Sendable (_ hit: Bool) -> Void {
        { [syncCacheHits, syncCacheMisses] hit in (hit ? syncCacheHits : syncCacheMisses).increment() }
    }

    /// Counts the outcome of `body` in `family` under `labels` and `success`, or the error's code.
    func counting<T>(_ family: MetricFamily<Counter>, _ labels: [String], success: String, _ body: () throws -> T) throws -> T {
        do {
            let value = try body()
            family.metric(labels + [success]).increment()
            return value
        } catch {
            family.metric(labels + [IdentityMetrics.code(of: error)]).increment()
            throw error
        }
    }

    /// The label of a failure: the snake_case code of a domain error, `database` or `error`.
    static func code(of error: any Error) -> String {
        switch error {
        case let error as IdentityError: snakeCase(error.code.rawValue)
        case let error as SignInError: snakeCase(error.code.rawValue)
        case let error as AppleAPIError: error.code.rawValue
        case is MariaDBError: "database"
        default: "error"
        }
    }

    private static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}

extension SignInUseCases.WebRedemption {
    /// The `result` label of a web sign-in in `siwa_sign_ins_total`.
    var metricLabel: String {
        switch self {
        case .signedIn: "success"
        case .failed(_, let code): code
        case .otherBrowser: "other_browser"
        case .unknown: "unknown_handle"
        case .app(_, let signedIn): signedIn ? "app_code" : "app_failed"
        }
    }
}

extension Sessions.Rotation {
    /// The `result` label of `siwa_refreshes_total`.
    var metricLabel: String {
        switch self {
        case .rotated: "rotated"
        case .reissued: "reuse_interval"
        case .reused: "reuse_detected"
        case .unknown: "unknown"
        case .inactive: "session_ended"
        }
    }
}
