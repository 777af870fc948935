/// A statement's text and the values bound to its `?`s, written as a string literal: `\(value)`
/// binds a value (a `?` in the text, the value among the binds), `\(fragment)` of another `SQL`
/// splices its text and binds, `\(list: values)` writes an `IN` list of binds, and only
/// `\(raw: text)` splices text as it is, for trusted text that no input reaches (a column list, an
/// identifier from an enum). A value can never land in the text by an interpolation that forgot to
/// bind it, as it could in a `String` (postgres-nio's `PostgresQuery`, GRDB's `SQLInterpolation`).
///
/// A literal with no interpolated value may still take its values as the trailing binds of
/// `Connection.query(_:_:)` and the like, one per `?` it shows; a statement binds either way, not
/// both. Statements are prepared once per connection for each text, so the text must not vary
/// with the values: a list is padded to few lengths (`appendInterpolation(list:)`).
package struct SQL: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The text sent to the server, with a `?` for each bound value.
    package private(set) var text: String
    /// The values bound by interpolation, in the order of their `?`s.
    package private(set) var binds: [Value]

    /// A statement of trusted text and no binds.
    /// - Parameter text: a literal (string literals become `SQL` by themselves).
    package init(stringLiteral text: String) {
        self.text = text
        binds = []
    }

    /// The statement an interpolated literal built.
    package init(stringInterpolation: Interpolation) {
        text = stringInterpolation.text
        binds = stringInterpolation.binds
    }

    /// The text only: no bound value is shown (they may be tokens or addresses).
    package var description: String { text }

    /// Two statements one after the other, their texts joined without a separator.
    package static func + (lhs: SQL, rhs: SQL) -> SQL {
        var joined = lhs
        joined.text += rhs.text
        joined.binds += rhs.binds
        return joined
    }

    /// Statements joined with `separator` between them (`", "`, `" AND "`, `"; "`).
    package static func joined(_ parts: some Sequence<SQL>, separator: SQL) -> SQL {
        var joined: SQL = ""
        for (index, part) in parts.enumerated() {
            if index > 0 { joined = joined + separator }
            joined = joined + part
        }
        return joined
    }

    /// The values to bind: those interpolated, or else `trailing` (a literal's values given after it).
    /// - Throws: `MariaDBError(.misuse)` when it has both.
    package func values(trailing: [any DatabaseValueConvertible]) throws -> [Value] {
        guard !trailing.isEmpty else { return binds }
        guard binds.isEmpty else {
            throw MariaDBError(.misuse, message: "a statement binds its values by interpolation or after it, not both")
        }
        return trailing.map(\.databaseValue)
    }

    /// The lengths an `IN` list of binds is padded to, longest first; a longer list is split into
    /// chunks of the first (`chunks(_:)`).
    package static let listLengths = [64, 32, 16, 8, 4, 2, 1]

    /// `values` in chunks of at most `listLengths[0]`, each for one statement's `IN` list.
    package static func chunks<Element>(_ values: [Element]) -> [ArraySlice<Element>] {
        stride(from: 0, to: values.count, by: listLengths[0]).map { values[$0..<min($0 + listLengths[0], values.count)] }
    }

    /// Builds an `SQL` from a literal's pieces.
    package struct Interpolation: StringInterpolationProtocol {
        var text = ""
        var binds: [Value] = []

        /// Reserves room for the literal's text.
        package init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount)
        }

        /// The literal's own text, as written.
        package mutating func appendLiteral(_ literal: String) {
            text += literal
        }

        /// Binds `value`: a `?` in the text.
        package mutating func appendInterpolation(_ value: some DatabaseValueConvertible) {
            text += "?"
            binds.append(value.databaseValue)
        }

        /// Binds `value`, or NULL for nil (an overload of its own, so that an optional is bound
        /// without the compiler's warning about interpolating optionals).
        package mutating func appendInterpolation(_ value: (some DatabaseValueConvertible)?) {
            text += "?"
            binds.append(value?.databaseValue ?? .null)
        }

        /// Another statement's text and binds, in place.
        package mutating func appendInterpolation(_ fragment: SQL) {
            text += fragment.text
            binds += fragment.binds
        }

        /// Trusted text as it is: never a value that came from outside (bind it instead).
        package mutating func appendInterpolation(raw trusted: String) {
            text += trusted
        }

        /// A list of binds for `IN (...)`, `?, ?, ...`: padded to a length of `listLengths` by
        /// repeating its last value (a repeat changes nothing in such a list), so that lists of any
        /// length up to `listLengths[0]` make few statement texts; a longer list is not padded.
        /// - Precondition: `values` is not empty (`IN ()` is not SQL).
        package mutating func appendInterpolation<Element: DatabaseValueConvertible>(list values: some Collection<Element>) {
            precondition(!values.isEmpty, "an IN list needs at least one value")
            var listed = values.map(\.databaseValue)
            if let length = SQL.listLengths.last(where: { $0 >= listed.count }) {
                listed += repeatElement(listed[listed.count - 1], count: length - listed.count)
            }
            text += Array(repeating: "?", count: listed.count).joined(separator: ", ")
            binds += listed
        }

        /// Tuples of binds for `(a, b) IN (...)`, `(?, ?), (?, ?)`: padded as `list:` pads values,
        /// by repeating the last tuple (a repeat changes nothing in such a list).
        /// - Precondition: there is a tuple, and every tuple has the first one's length (at least one).
        package mutating func appendInterpolation(tuples: [[any DatabaseValueConvertible]]) {
            var padded = tuples
            if let last = tuples.last, let length = SQL.listLengths.last(where: { $0 >= tuples.count }) {
                padded += repeatElement(last, count: length - tuples.count)
            }
            appendInterpolation(rows: padded)
        }

        /// Rows of binds for `VALUES (...), (...)` or a list of tuples, `(?, ?), (?, ?)`: each row
        /// in parentheses, not padded (a repeated row would be inserted twice).
        /// - Precondition: there is a row, and every row has the first row's length (at least one).
        package mutating func appendInterpolation(rows: [[any DatabaseValueConvertible]]) {
            precondition(!rows.isEmpty && !rows[0].isEmpty, "a list of rows needs a row of at least one value")
            precondition(rows.allSatisfy { $0.count == rows[0].count }, "the rows of a list have one length")
            let row = "(" + Array(repeating: "?", count: rows[0].count).joined(separator: ", ") + ")"
            text += Array(repeating: row, count: rows.count).joined(separator: ", ")
            binds += rows.flatMap { $0.map(\.databaseValue) }
        }
    }
}
