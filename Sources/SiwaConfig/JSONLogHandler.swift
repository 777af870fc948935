package import Foundation
package import Identity
import JOSE
package import Logging
import StrictJSON

#if canImport(Glibc)
    import Glibc
#endif

/// How log lines are written (`SIWA_LOG_FORMAT`).
package enum LogFormat: String, Sendable {
    /// swift-log's readable lines.
    case text
    /// One JSON object per line (`JSONLogHandler`).
    case json
}

/// A swift-log handler writing one JSON object per line to standard error, for a log pipeline:
/// `time` (RFC 3339, UTC, milliseconds), `level`, `logger`, `message`, then the metadata as
/// members (a nested value as an object or array; every leaf a string). A line is written with one
/// `write(2)`, so lines of concurrent threads never interleave.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    private let label: String
    private let descriptor: Int32
    private let clock: any WallClock

    /// - Parameters:
    ///   - label: the logger's label (`logger` in each line).
    ///   - descriptor: where lines go; standard error by default.
    ///   - clock: the time each line carries.
    package init(label: String, descriptor: Int32 = STDERR_FILENO, clock: any WallClock = SystemClock()) {
        self.label = label
        self.descriptor = descriptor
        self.clock = clock
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: clock.now()), level: event.level, label: label, message: "\(event.message)",
            metadata: metadata.merging(event.metadata ?? [:]) { _, new in new })
        line.append(UInt8(ascii: "\n"))
        line.withUnsafeBytes { bytes in _ = Glibc.write(descriptor, bytes.baseAddress, bytes.count) }
    }

    /// One log line's JSON object, without the newline. Metadata keys that would replace the
    /// fixed members are dropped.
    package static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.member("time", timestamp(time))
        writer.member("level", level.rawValue)
        writer.member("logger", label)
        writer.member("message", message)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !fixedMembers.contains(key) {
            writer.key(key)
            append(value, to: &writer)
        }
        writer.endObject()
        return writer.bytes
    }

    private static let fixedMembers: Set<String> = ["time", "level", "logger", "message"]

    private static func append(_ value: Logger.Metadata.Value, to writer: inout JSONWriter) {
        switch value {
        case .string(let string): writer.string(string)
        case .stringConvertible(let convertible): writer.string(convertible.description)
        case .array(let values):
            writer.beginArray()
            for value in values { append(value, to: &writer) }
            writer.endArray()
        case .dictionary(let members):
            writer.beginObject()
            for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                writer.key(key)
                append(value, to: &writer)
            }
            writer.endObject()
        }
    }

    /// `2026-11-23T10:04:05.123Z`.
    private static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }
}
