package import FastCGI

/// Maps a method and a path to a route. Path patterns are literal segments and `{name}` parameters.
package struct Router: Sendable {
    /// Every route, in the order added.
    package private(set) var routes: [Route] = []

    package init() {}

    /// Adds routes; their patterns must not overlap those already added.
    package mutating func add(_ routes: [Route]) {
        self.routes += routes
    }

    /// Adds a route with the default attributes (`Route.init`): `pattern` such as `/auth/sessions/{id}`.
    package mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Route.Handler) {
        add([Route(method, pattern, handler)])
    }

    /// What the router found for a request: the route of its path and method, or why none, with
    /// the route whose attributes answer it then.
    package struct Lookup {
        /// The route of the request's path and method, and the path's values of its parameters.
        package let found: (route: Route, context: RouteContext)?
        /// The route whose `answers` and `access` shape the answer: `found`'s; for a method the path
        /// has no route of, the path's first route; for a path no route has, the route whose pattern
        /// it extends below a `{parameter}` (`/auth/app-callback/a/b` is answered as the relay's
        /// page); else nil, an API's answer.
        package let attributes: Route?
        /// `HTTPError` 404 when no route has this path, `MethodNotAllowed` when none has this method.
        package let failure: (any Error)?

        /// The route found, with its context.
        /// - Throws: `failure`.
        package func route() throws -> (route: Route, context: RouteContext) {
            guard let found else { throw failure ?? HTTPError.notFound }
            return found
        }
    }

    /// Finds the route of `request`. `HEAD` is answered by the `GET` route of the path; nginx sends
    /// the client its headers only (RFC 9110 §9.3.2).
    package func lookup(_ request: Request) -> Lookup {
        let segments = request.path.split(separator: "/")
        let method = request.method == "HEAD" ? "GET" : request.method
        var allowed: [String] = []
        var first: Route?
        for route in routes {
            guard let parameters = Router.parameters(route.segments, segments) else { continue }
            if route.method == method {
                let context = RouteContext(parameters: parameters, bodyLimits: route.bodyLimits)
                return Lookup(found: (route, context), attributes: route, failure: nil)
            }
            first = first ?? route
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
        }
        if let first { return Lookup(found: nil, attributes: first, failure: MethodNotAllowed(allowed: allowed)) }
        let below = routes.first { route in
            route.pattern.firstIndex(of: "{").map { request.path.hasPrefix(route.pattern[..<$0]) } ?? false
        }
        return Lookup(found: nil, attributes: below, failure: HTTPError.notFound)
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
