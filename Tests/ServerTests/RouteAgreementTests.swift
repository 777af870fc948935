import FastCGI
import Foundation
import Logging
import MariaDB
import Server
import SiwaConfig
import Telemetry
import Testing

/// The route table against the two other places that state a route's facts: nginx/siwa-locations.conf
/// (a location passes the route to siwa and refuses the bodies siwa refuses; nginx's own 405 names
/// the route's methods; nginx's own errors are pages on a browser's routes only) and
/// docs/openapi.yaml (each route documented, with who may call it, its pages, its `Origin` rule and
/// the token endpoint's headers). A route added to the table alone fails here, named with what is missing.
@Suite struct RouteAgreementTests {
    static let root = #filePath.replacingOccurrences(of: "Tests/ServerTests/RouteAgreementTests.swift", with: "")

    /// The configuration the checks assume: the defaults (`SIWA_MAX_BODY_BYTES` in particular).
    static let config = AppConfig(database: MariaDB.Configuration(endpoint: .unixSocket(path: "/nonexistent/siwa-test.sock"), user: "siwa"))

    /// Every route `siwa serve` answers: the contract's and the operator's `GET /metrics`.
    static func servedRoutes() -> [Route] {
        let application = Application(config: config, logger: Logger(label: "test"), metrics: PrometheusExporter())
        defer { application.stop() }
        return application.router.routes
    }

    static func site() throws -> NginxSite {
        try NginxSite(String(contentsOfFile: root + "nginx/siwa-locations.conf", encoding: .utf8))
    }

    static func document() throws -> String {
        try String(contentsOfFile: root + "docs/openapi.yaml", encoding: .utf8)
    }

    /// A path of `pattern`, each `{parameter}` given a value.
    static func path(of pattern: String) -> String {
        pattern.split(separator: "/", omittingEmptySubsequences: false).map { $0.first == "{" ? "name" : $0 }.joined(separator: "/")
    }

    /// Where `routes` and nginx's `site` disagree, one line each, naming the route or location.
    static func nginxProblems(_ routes: [Route], _ site: NginxSite, maximumBodyBytes: Int) throws -> [String] {
        var problems: [String] = []
        for route in routes {
            let name = "\(route.method) \(route.pattern)"
            let path = path(of: route.pattern)
            guard let location = site.location(for: path), location.passesToSiwa else {
                problems.append("\(name): no location of nginx/siwa-locations.conf passes \(path) to siwa")
                continue
            }
            // nginx refuses the bodies siwa refuses; a GET's body is never read, so there nginx may
            // leave a larger one for siwa to refuse.
            let limit = min(route.bodyLimits.bytes, maximumBodyBytes)
            let size = site.bodySize(of: location) ?? .max
            if route.method == "GET" ? size < limit : size != limit {
                problems.append("\(name): the client_max_body_size of \(location.name) is \(size) bytes, the route's limit \(limit)")
            }
            let methods = routes.filter { $0.pattern == route.pattern }.flatMap { $0.method == "GET" ? ["GET", "HEAD"] : [$0.method] }
            let allow = try site.value(of: "$siwa_allow", testing: "$siwa_error", against: "/_errors/405 " + path) ?? "nothing"
            if allow != methods.joined(separator: ", ") {
                problems.append(
                    "\(name): nginx's own 405 for \(path) has Allow \(allow), not \(methods.joined(separator: ", ")) (the $siwa_allow patterns of location ^~ /_errors/)"
                )
            }
            let page = try site.value(of: "$siwa_error_format", testing: "$request_uri", against: path) == "html"
            if page != (route.answers == .page) {
                problems.append(
                    "\(name): nginx's own errors for \(path) are \(page ? "" : "not ")pages, the route's are \(route.answers == .page ? "" : "not ")(the $request_uri pattern of location ^~ /_errors/)"
                )
            }
        }
        for location in site.locations where location.passesToSiwa {
            if location.isInternal {
                // nginx's own requests: the auth_request of a protected location.
                let method = location.value(of: "fastcgi_param REQUEST_METHOD") ?? "?"
                let uri = location.value(of: "fastcgi_param REQUEST_URI") ?? "?"
                if !routes.contains(where: { $0.method == method && $0.pattern == uri && $0.access == .authRequest }) {
                    problems.append("\(location.name) sends \(method) \(uri), which is no route for nginx's auth_request")
                }
            } else if !routes.contains(where: { site.location(for: path(of: $0.pattern))?.name == location.name }) {
                problems.append("\(location.name) passes requests to siwa, but no route is there")
            }
        }
        return problems
    }

    /// Where `routes` and the operations of docs/openapi.yaml disagree, one line each, naming the route.
    static func documentProblems(_ routes: [Route], _ document: String) -> [String] {
        let operations = OpenAPITests.operations(document)
        var problems: [String] = []
        for route in routes {
            let name = "\(route.method) \(route.pattern)"
            guard let lines = operations[name] else {
                problems.append(
                    "\(name): missing from docs/openapi.yaml (`\(route.method.lowercased())` under `\(route.pattern)` of `paths`)")
                continue
            }
            let block = lines.joined(separator: "\n")
            let security = lines.first { $0.hasPrefix("      security:") }.map { $0.filter { $0 != " " } }
            let expected: String? =
                switch route.access {
                case .session, .authRequest: "security:[{bearer:[]},{sessionCookie:[]}]"
                case .linkSecret: "security:[{linkSecret:[]}]"
                case .anyone, .ownOrigin: nil
                }
            if let expected, security != expected {
                problems.append("\(name): docs/openapi.yaml's \(security ?? "security is none"), not \(expected)")
            } else if expected == nil, let security, !security.contains("{}") {
                problems.append("\(name): docs/openapi.yaml's \(security), but anyone may call the route")
            }
            if block.contains("#/components/responses/BrowserPage") != (route.answers == .page) {
                problems.append(
                    "\(name): docs/openapi.yaml's errors \(route.answers == .page ? "are not" : "are") BrowserPage, the route's \(route.answers == .page ? "are" : "are not")"
                )
            }
            let originRule =
                route.access == .ownOrigin || route.access == .authRequest || (route.access == .session && route.method != "GET")
            if block.contains("#/components/responses/OriginMismatch") != originRule {
                problems.append("\(name): docs/openapi.yaml \(originRule ? "lacks" : "has") the 403 OriginMismatch of a cookie write")
            }
            if block.contains("#/components/headers/NoCache") != (route.answers == .tokenEndpoint) {
                problems.append("\(name): docs/openapi.yaml's Pragma: no-cache (a token endpoint's answers) does not fit the route")
            }
        }
        for operation in operations.keys.sorted() where !routes.contains(where: { "\($0.method) \($0.pattern)" == operation }) {
            problems.append("\(operation): in docs/openapi.yaml, but no route")
        }
        return problems
    }

    @Test("nginx passes every route to siwa with its body limit, its methods in Allow and its kind of error; nothing else")
    func nginxAgrees() throws {
        let routes = Self.servedRoutes()
        #expect(routes.count > 20 && routes.contains { $0.pattern == "/metrics" }, "the contract's routes and /metrics")
        for problem in try Self.nginxProblems(routes, Self.site(), maximumBodyBytes: Self.config.maxBodyBytes) {
            Issue.record(Comment(rawValue: problem))
        }
    }

    @Test("docs/openapi.yaml documents every route of the contract, with who may call it and how it answers; nothing else")
    func documentAgrees() throws {
        let routes = Application.routes().routes
        #expect(routes.count > 20, "the contract's routes")
        for problem in try Self.documentProblems(routes, Self.document()) {
            Issue.record(Comment(rawValue: problem))
        }
    }

    @Test("A route added to the table alone is named, with what nginx and the document lack")
    func forgottenRoute() throws {
        let routes = Self.servedRoutes()
        let added = [
            Route("POST", "/auth/forgotten", access: .session) { _, _, _ in Response(status: 204) },
            Route("GET", "/elsewhere") { _, _, _ in Response(status: 204) },
        ]
        let (site, document) = (try Self.site(), try Self.document())
        let bytes = Self.config.maxBodyBytes
        let nginx = try Set(Self.nginxProblems(routes + added, site, maximumBodyBytes: bytes))
            .subtracting(Self.nginxProblems(routes, site, maximumBodyBytes: bytes))
        #expect(
            nginx == [
                "POST /auth/forgotten: nginx's own 405 for /auth/forgotten has Allow GET, HEAD, not POST (the $siwa_allow patterns of location ^~ /_errors/)",
                "GET /elsewhere: no location of nginx/siwa-locations.conf passes /elsewhere to siwa",
            ])
        let documented = Set(Self.documentProblems(routes + added, document)).subtracting(Self.documentProblems(routes, document))
        #expect(
            documented == [
                "POST /auth/forgotten: missing from docs/openapi.yaml (`post` under `/auth/forgotten` of `paths`)",
                "GET /elsewhere: missing from docs/openapi.yaml (`get` under `/elsewhere` of `paths`)",
            ])
    }

    @Test("The reader of nginx's configuration finds locations, body sizes and the error location's rules")
    func nginxReader() throws {
        let site = try NginxSite(
            """
            client_max_body_size 1m;
            location ^~ /_errors/ {
                internal;
                if ($siwa_error ~ "^/_errors/405 ") {
                    set $siwa_allow "GET, HEAD";
                }
                if ($siwa_error ~ "^/_errors/405 /(a|b)(\\?|$)") {
                    set $siwa_allow "POST";
                }
            }
            location /api/ {
                client_max_body_size 32k;
                fastcgi_pass siwa_app;
            }
            # location = /commented {
            location = /api/exact {
                fastcgi_pass siwa_app;
            }
            location @named {
                return 404;
            }
            """)
        #expect(site.bodySize == 1024 * 1024)
        #expect(site.locations.map(\.name) == ["location ^~ /_errors/", "location /api/", "location = /api/exact", "location @named"])
        #expect(site.location(for: "/api/x").map { site.bodySize(of: $0) } == 32 * 1024)
        #expect(site.location(for: "/api/exact").map { site.bodySize(of: $0) } == 1024 * 1024)
        #expect(site.location(for: "/_errors/404") == nil, "internal")
        #expect(try site.value(of: "$siwa_allow", testing: "$siwa_error", against: "/_errors/405 /a") == "POST")
        #expect(try site.value(of: "$siwa_allow", testing: "$siwa_error", against: "/_errors/405 /ab") == "GET, HEAD")
    }

    @Test("Each route's access is what it answers a request without it; a browser's routes answer with pages, the token endpoint as one")
    func attributesAreBehaviour() throws {
        let app = try BrowserSignInApplication()
        for route in Application.routes().routes {
            let name = "\(route.method) \(route.pattern)"
            let path = Self.path(of: route.pattern)
            let headers: HTTPHeaders
            switch route.access {
            case .session, .authRequest, .ownOrigin: headers = HTTPHeaders([])
            case .linkSecret: headers = HTTPHeaders([("Cookie", "a=b"), ("Authorization", "Bearer secret")])
            case .anyone: continue
            }
            let response = app.worker.respond(to: Request(method: route.method, path: path, headers: headers))
            let expected =
                switch route.access {
                case .session, .authRequest: (401, "invalid_token")
                case .ownOrigin: (403, "origin_mismatch")
                default: (403, "not_for_browsers")
                }
            #expect(response.status == expected.0 && String(decoding: response.body, as: UTF8.self).contains(expected.1), "\(name)")
        }
        for route in Application.routes().routes {
            let wrongMethod = app.respond(route.method == "GET" ? "POST" : "GET", Self.path(of: route.pattern))
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.isPage(405) == (route.answers == .page), "\(route.method) \(route.pattern)")
            #expect(wrongMethod.values(of: "Pragma") == (route.answers == .tokenEndpoint ? ["no-cache"] : []))
        }
        // Below a browser's route's parameter, a path no route has is answered as that route's.
        #expect(app.respond("POST", "/auth/app-callback/https:/evil.example").isPage(404))
        #expect(!app.respond("DELETE", "/auth/sessions/1/2").isPage(404))
    }
}
