internal import COpenSSL

/// An OpenSSL failure, with the thread's error queue drained into `stack`.
package struct OpenSSLError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    package enum Code: Sendable, Equatable {
        /// An OpenSSL call returned failure.
        case operationFailed
        /// Input that cannot be a key (bad PEM, bad JWK parameters).
        case invalidKey
        /// Input of the wrong shape (bad length, bad encoding).
        case invalidInput
    }

    package let code: Code
    package let reason: String
    /// The drained OpenSSL error queue, oldest first, as `lib:reason: text`.
    package let stack: [String]
    package let file: String
    package let line: Int

    package init(_ code: Code, reason: String, stack: [String] = [], file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.stack = stack
        self.file = file
        self.line = line
    }

    /// Builds an error from the current thread's OpenSSL error queue and empties the queue.
    static func drainingQueue(_ code: Code, reason: String, file: String = #fileID, line: Int = #line) -> OpenSSLError {
        var stack: [String] = []
        while true {
            let packed = ERR_get_error()
            if packed == 0 { break }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(packed, &text, text.count)
            stack.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return OpenSSLError(code, reason: reason, stack: stack, file: file, line: line)
    }

    package var description: String { "OpenSSLError.\(code)" }

    package var debugDescription: String {
        "OpenSSLError.\(code): \(reason) \(stack) [\(file):\(line)]"
    }
}

extension OpenSSLError: Equatable {
    /// Errors compare by code only.
    package static func == (lhs: OpenSSLError, rhs: OpenSSLError) -> Bool { lhs.code == rhs.code }
}
