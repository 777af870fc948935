/// A value bound to a statement parameter or read from a result column.
package enum Value: Sendable, Equatable {
    case null
    case int(Int64)
    /// An unsigned column value above `Int64.max`, or any unsigned column.
    case uint(UInt64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift type that binds to a parameter and decodes from a column.
package protocol DatabaseValueConvertible {
    /// The value to bind.
    var databaseValue: Value { get }
    /// Decodes a column value.
    /// - Throws: `MariaDBError(.typeMismatch)`.
    static func decode(from value: Value) throws -> Self
}

extension Int64: DatabaseValueConvertible {
    package var databaseValue: Value { .int(self) }
    package static func decode(from value: Value) throws -> Int64 {
        switch value {
        case .int(let int): return int
        case .uint(let uint) where uint <= UInt64(Int64.max): return Int64(uint)
        default: throw mismatch(value, "Int64")
        }
    }
}

extension Int: DatabaseValueConvertible {
    package var databaseValue: Value { .int(Int64(self)) }
    package static func decode(from value: Value) throws -> Int { Int(try Int64.decode(from: value)) }
}

extension UInt64: DatabaseValueConvertible {
    package var databaseValue: Value { .uint(self) }
    package static func decode(from value: Value) throws -> UInt64 {
        switch value {
        case .uint(let uint): return uint
        case .int(let int) where int >= 0: return UInt64(int)
        default: throw mismatch(value, "UInt64")
        }
    }
}

extension Bool: DatabaseValueConvertible {
    package var databaseValue: Value { .int(self ? 1 : 0) }
    package static func decode(from value: Value) throws -> Bool { try Int64.decode(from: value) != 0 }
}

extension Double: DatabaseValueConvertible {
    package var databaseValue: Value { .double(self) }
    package static func decode(from value: Value) throws -> Double {
        switch value {
        case .double(let double): return double
        case .int(let int): return Double(int)
        case .uint(let uint): return Double(uint)
        case .text(let text): if let double = Double(text) { return double }
        default: break
        }
        throw mismatch(value, "Double")
    }
}

extension String: DatabaseValueConvertible {
    package var databaseValue: Value { .text(self) }
    package static func decode(from value: Value) throws -> String {
        switch value {
        case .text(let text): return text
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        default: throw mismatch(value, "String")
        }
    }
}

extension [UInt8]: DatabaseValueConvertible {
    package var databaseValue: Value { .blob(self) }
    package static func decode(from value: Value) throws -> [UInt8] {
        switch value {
        case .blob(let bytes): return bytes
        case .text(let text): return Array(text.utf8)
        default: throw mismatch(value, "[UInt8]")
        }
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    package var databaseValue: Value { self?.databaseValue ?? .null }
    package static func decode(from value: Value) throws -> Wrapped? {
        value == .null ? nil : try Wrapped.decode(from: value)
    }
}

private func mismatch(_ value: Value, _ type: String) -> MariaDBError {
    let kind =
        switch value {
        case .null: "NULL"
        case .int: "integer"
        case .uint: "unsigned integer"
        case .double: "double"
        case .text: "text"
        case .blob: "blob"
        }
    return MariaDBError(.typeMismatch, message: "cannot decode \(kind) as \(type)")
}

/// One result row: the column values in select order, with their names.
package struct Row: Sendable {
    package let values: [Value]
    let columns: ColumnNames

    /// Decodes column `index` as `type`.
    /// - Throws: `MariaDBError(.typeMismatch)` (also for NULL into a non-optional type).
    package func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, at index: Int) throws -> T {
        try T.decode(from: values[index])
    }

    /// Decodes the column named `name` as `type`.
    /// - Throws: `MariaDBError(.misuse)` for an unknown column, `.typeMismatch` for a bad value.
    package func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, column name: String) throws -> T {
        guard let index = columns.indexes[name] else {
            throw MariaDBError(.misuse, message: "no column \(name)")
        }
        return try T.decode(from: values[index])
    }
}

/// The column names of a result, shared by all its rows (made once per prepared statement), with
/// each name's position: a row is read by name with one lookup per value.
final class ColumnNames: Sendable {
    let names: [String]
    /// Each name's first position.
    let indexes: [String: Int]

    init(_ names: [String]) {
        self.names = names
        indexes = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// What a statement without a result set changed.
package struct ExecutionResult: Sendable, Equatable {
    /// Rows inserted, updated or deleted (for `ON DUPLICATE KEY UPDATE`: 1 inserted, 2 updated, 0 unchanged).
    package let affectedRows: UInt64
    /// The `AUTO_INCREMENT` value of the last inserted row, or 0.
    package let lastInsertID: UInt64
}

/// A value binds as itself (a recorded statement's values sent again: `StatementRecorder`).
extension Value: DatabaseValueConvertible {
    /// The value itself.
    package var databaseValue: Value { self }
    /// The column's value as it is.
    package static func decode(from value: Value) throws -> Value { value }
}
