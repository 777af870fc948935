internal import CMariaDB

/// A MariaDB failure with the server's or client library's error number and SQLSTATE.
///
/// `description` names only the code; bound values and SQL are never included (they can hold tokens).
package struct MariaDBError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    package enum Code: Sendable, Equatable {
        /// The server cannot be reached or the connection broke (2002, 2003, 2006, 2013, 1243, ...).
        /// The connection reconnects on its next use.
        case connectionLost
        /// A unique key already holds this value (1062).
        case duplicateEntry
        /// The transaction was chosen as a deadlock victim (1213); the caller may retry it whole.
        case deadlock
        /// A row lock was not granted in time (1205).
        case lockWaitTimeout
        /// The statement failed on the server (syntax, constraint, data too long, ...).
        case statementFailed
        /// A result column could not be decoded as the requested Swift type.
        case typeMismatch
        /// The API was misused (nested transaction, wrong bind count).
        case misuse
    }

    package let code: Code
    /// `mysql_errno`, or 0 when the error did not come from the library.
    package let errno: UInt32
    /// `mysql_sqlstate`, such as `23000`.
    package let sqlState: String
    /// The library's message; may quote values, so it goes to `debugDescription` only.
    package let message: String
    package let file: String
    package let line: Int
    /// A lost connection that ended a transaction before its COMMIT was sent: the server rolled it
    /// back, so running the whole transaction again is safe. False for a loss at COMMIT, whose
    /// outcome is unknown.
    package var rolledBackTransaction = false

    package init(
        _ code: Code, errno: UInt32 = 0, sqlState: String = "HY000", message: String = "",
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.errno = errno
        self.sqlState = sqlState
        self.message = message
        self.file = file
        self.line = line
    }

    /// Maps a library error number to a code (`errmsg.h`, `mysqld_error.h`).
    package init(errno: UInt32, sqlState: String, message: String, file: String = #fileID, line: Int = #line) {
        let code: Code =
            switch errno {
            // 1047: a Galera node that is not part of the primary component ("WSREP has not yet
            // prepared node for application use"): the statement was refused, use another node.
            case 2002, 2003, 2005, 2006, 2013, 2055, 1243, 1927, 1053, 4031, 1047: .connectionLost
            case 1062: .duplicateEntry
            case 1213: .deadlock
            case 1205: .lockWaitTimeout
            default: .statementFailed
            }
        self.init(code, errno: errno, sqlState: sqlState, message: message, file: file, line: line)
    }

    /// The latest error of the connection `mysql`.
    init(connection mysql: UnsafeMutablePointer<MYSQL>, file: String = #fileID, line: Int = #line) {
        self.init(
            errno: mysql_errno(mysql), sqlState: String(cString: mysql_sqlstate(mysql)), message: String(cString: mysql_error(mysql)),
            file: file, line: line)
    }

    package var description: String { "MariaDBError.\(code) (\(errno)/\(sqlState))" }

    /// For logs: the message with quoted values redacted (a duplicate entry quotes the row's value,
    /// which may be an email); quoted names of keys and tables, and file paths, stay.
    package var debugDescription: String {
        "MariaDBError.\(code) (\(errno)/\(sqlState)): \(MariaDBError.redactingValues(message)) [\(file):\(line)]"
    }

    static func redactingValues(_ message: String) -> String {
        let characters = Array(message)
        // An apostrophe between two letters ("Can't") is part of a word, not a quote.
        let quotes = characters.indices.filter { index in
            characters[index] == "'"
                && !(index > 0 && index + 1 < characters.count && characters[index - 1].isLetter && characters[index + 1].isLetter)
        }
        var result = ""
        var copied = 0
        for pair in stride(from: 0, to: quotes.count - 1, by: 2) {
            let (open, close) = (quotes[pair], quotes[pair + 1])
            let quoted = String(characters[open + 1..<close])
            result += String(characters[copied...open]) + (isName(quoted) ? quoted : "<redacted>")
            copied = close
        }
        return result + String(characters[copied...])
    }

    /// A key or table name, or a file path (a socket's): nothing a user typed.
    private static func isName(_ text: String) -> Bool {
        let allowed: (Character) -> Bool = { $0.isASCII && ($0.isLetter || $0.isNumber || "_.$`".contains($0)) }
        if text.hasPrefix("/") { return text.count <= 256 && text.allSatisfy { allowed($0) || "/-".contains($0) } }
        return text.count <= 64 && text.allSatisfy(allowed)
    }
}

extension MariaDBError: Equatable {
    /// Errors compare by code only.
    package static func == (lhs: MariaDBError, rhs: MariaDBError) -> Bool { lhs.code == rhs.code }
}
