/// Records each distinct statement a `Connection` sends, once, with the values of its first
/// sending and the place in the source that sent it, for tests that look at every statement the
/// code has (`StatementPlanTests` runs `EXPLAIN` on each).
///
/// Off unless a connection is given one (`Connection.statementRecorder`): a connection without a
/// recorder pays one nil check per statement. It records what `query`, `execute`,
/// `executeWithNext` and `executeBatch` are given (a batch's first row as its values), before
/// the statement runs; not `run`'s text (migrations and commands) nor the transaction's own
/// START TRANSACTION and COMMIT. Confined to the connection's thread, like the connection.
package final class StatementRecorder {
    /// One statement as it was sent.
    package struct Statement: Sendable, Equatable {
        /// The text, with a `?` for each bound value.
        package var text: String
        /// The values of its first sending, one per `?`.
        package var values: [Value]
        /// Where the source sent it: the `#fileID` of the call (`Accounts/Sessions.swift`) and its line.
        package var file: String
        /// The line of the call in `file`.
        package var line: Int
    }

    /// The statements in the order they were first sent, each text once per place in the source.
    package private(set) var statements: [Statement] = []
    private var seen: Set<String> = []

    /// A recorder with nothing recorded.
    package init() {}

    /// Adds the statement unless its text was recorded from the same place before.
    func record(_ text: String, _ values: [Value], file: StaticString, line: UInt) {
        let file = "\(file)"
        guard seen.insert("\(file):\(line)\n\(text)").inserted else { return }
        statements.append(Statement(text: text, values: values, file: file, line: Int(line)))
    }
}
