package import FastCGI
package import Identity

/// Maps a method and a path to a handler. Path patterns are literal segments and `{name}` parameters.
package struct Router: Sendable {
    /// A handler: the request, its path parameters, and the worker thread's use cases.
    package typealias Handler = @Sendable (Request, [String: String], UseCases) throws -> Response

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Substring]
        let handler: Handler
    }

    private var routes: [Route] = []

    package init() {}

    /// Adds a route. `pattern` such as `/auth/sessions/{id}`.
    package mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, segments: pattern.split(separator: "/"), handler: handler))
    }

    /// Every route as its method and pattern, in the order added.
    package var endpoints: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    /// A route found for a request.
    package struct Match {
        package let handler: Handler
        package let parameters: [String: String]
        /// The route's pattern, such as `/auth/sessions/{id}` (the metrics' and logs' `route`).
        package let pattern: String
    }

    /// Finds the handler of `request`. `HEAD` is answered by the `GET` route of the path; nginx
    /// sends the client its headers only (RFC 9110 §9.3.2).
    /// - Throws: `HTTPError` 404 when no route has this path, 405 when none has this method.
    package func match(_ request: Request) throws -> Match {
        let segments = request.path.split(separator: "/")
        let method = request.method == "HEAD" ? "GET" : request.method
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Router.parameters(route.segments, segments) else { continue }
            if route.method == method { return Match(handler: route.handler, parameters: parameters, pattern: route.pattern) }
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
        }
        if allowed.isEmpty { throw HTTPError.notFound }
        throw MethodNotAllowed(allowed: allowed)
    }

    private static func parameters(_ pattern: [Substring], _ path: [Substring]) -> [String: String]? {
        guard pattern.count == path.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, path) {
            if expected.first == "{" && expected.last == "}" {
                parameters[String(expected.dropFirst().dropLast())] = String(actual)
            } else if expected != actual {
                return nil
            }
        }
        return parameters
    }
}

/// 405 with the methods the path accepts.
package struct MethodNotAllowed: ClientFacingError {
    package let allowed: [String]
    package var status: Int { 405 }
    package var publicCode: String { "method_not_allowed" }
    package var publicMessage: String { "Use \(allowed.joined(separator: " or ")) for this path" }
}
