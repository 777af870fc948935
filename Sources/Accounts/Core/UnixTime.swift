import Foundation
package import MariaDB

/// How a stored time becomes a number in an answer. Every time is stored as DATETIME(3) in UTC
/// (the connection's time zone is `+00:00`) and is answered either as Unix milliseconds or as
/// Unix seconds rounded down, so the seconds of a fact are its milliseconds divided by 1,000 in
/// every answer: a time written by this process is taken as milliseconds first
/// (`nowMilliseconds()`) and stored as such, never as a second rounded another way.
package enum UnixTime {
    /// `column` as whole Unix seconds, rounded down; NULL stays NULL.
    package static func seconds(_ column: SQL) -> SQL {
        "CAST(FLOOR(UNIX_TIMESTAMP(\(column))) AS SIGNED)"
    }

    /// `column` as Unix milliseconds; NULL stays NULL.
    package static func milliseconds(_ column: SQL) -> SQL {
        "CAST(UNIX_TIMESTAMP(\(column)) * 1000 AS SIGNED)"
    }

    /// Now as Unix milliseconds, rounded down: store it with `FROM_UNIXTIME(? / 1000)`.
    package static func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// Milliseconds as the seconds every answer gives for them.
    package static func seconds(milliseconds: Int64) -> Int64 {
        milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
    }
}
