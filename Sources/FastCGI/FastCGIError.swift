/// An error of the FastCGI transport: the socket, the accept loop, or an unreadable request.
package struct FastCGIError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong, as a closed set of cases a caller can switch on.
    package enum Code: Sendable, Equatable {
        /// The listening socket could not be opened or its permissions set.
        case socketUnavailable
        /// The request body is larger than the configured limit (answer 413).
        case bodyTooLarge
        /// The request body could not be read (the peer closed the connection early).
        case bodyUnreadable
        /// A worker thread could not be started.
        case threadStart
    }

    package let code: Code
    package let reason: String
    package let errno: Int32?
    package let file: String
    package let line: Int

    package init(_ code: Code, reason: String = "", errno: Int32? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.errno = errno
        self.file = file
        self.line = line
    }

    package var description: String { "FastCGIError.\(code)" }

    package var debugDescription: String {
        var text = "FastCGIError.\(code): \(reason)"
        if let errno { text += " (errno \(errno))" }
        return text + " [\(file):\(line)]"
    }
}

extension FastCGIError: Equatable {
    /// Errors compare by code only, so tests can write `#expect(throws: FastCGIError(.bodyTooLarge))`.
    package static func == (lhs: FastCGIError, rhs: FastCGIError) -> Bool { lhs.code == rhs.code }
}
