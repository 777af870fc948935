import Foundation

/// A redirect URI registered for a native app that signs in through the browser (RFC 8252): a
/// private-use scheme (`com.example.app:/apple`), a loopback address (`http://127.0.0.1/apple`,
/// any port at sign-in, §7.3), or an https URL (a claimed one, §7.2). Compared exactly, except a
/// loopback one's port.
package struct AppRedirectURI: Sendable, Equatable, CustomStringConvertible {
    /// As configured (a loopback one without a port).
    package let value: String
    private let isLoopback: Bool

    /// - Returns: nil for anything else (a fragment, a loopback URI with a port or a host name,
    ///   http to anything but loopback, a refused scheme).
    package init?(configured value: String) {
        guard let scheme = AppURIs.scheme(of: value) else { return nil }
        switch scheme {
        case "http":
            guard value.range(of: #"^http://(127\.0\.0\.1|\[::1\])(/[^?]*)?(\?.*)?$"#, options: .regularExpression) != nil else {
                return nil
            }
            isLoopback = true
        case "https":
            guard AppURIs.hasHost(value) else { return nil }
            isLoopback = false
        default:
            isLoopback = false
        }
        self.value = value
    }

    /// Whether `requested` is this URI: the same string, or for a loopback one the same with any port.
    package func matches(_ requested: String) -> Bool {
        if requested == value { return true }
        guard isLoopback,
            let match = requested.range(
                of: #"^http://(127\.0\.0\.1|\[::1\]):[0-9]{1,5}(?=/|\?|$)"#, options: .regularExpression)
        else { return false }
        let authority = requested[match]
        guard let port = Int(authority[authority.index(after: authority.lastIndex(of: ":")!)...]), (1...65535).contains(port) else {
            return false
        }
        let withoutPort = String(authority[..<authority.lastIndex(of: ":")!]) + requested[match.upperBound...]
        return withoutPort == value
    }

    package var description: String { value }
}
