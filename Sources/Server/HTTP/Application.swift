import AccountData
package import AppleID
import CoreMetrics
package import FastCGI
package import Identity
package import Logging
package import SiwaConfig
package import Telemetry

/// The process-wide, immutable part of the application: configuration, routes, logger, and the
/// use cases' shared core.
package final class Application: Sendable {
    package let config: AppConfig
    package let router: Router
    package let logger: Logger
    package let core: IdentityCore
    /// The requests' metrics.
    let requestMetrics: RequestMetrics

    /// The request headers the handlers read (`Caller`, `Cookies`, the body's media type); only
    /// these are copied out of the FastCGI parameters, each line of a repeated header kept.
    /// `x-request-id` is filled from nginx's `REQUEST_ID` parameter instead, never from a header
    /// the client sent.
    package static let headerNames = ["authorization", "content-type", "cookie", "origin", "user-agent"]

    /// Headers a request must not repeat: which of two credentials, origins or media types would
    /// count is not for siwa and nginx to disagree on (nginx reads the first, others the last).
    static let singleHeaders = ["authorization", "origin", "content-type"]

    /// - Parameters:
    ///   - config: the validated configuration.
    ///   - logger: the root logger.
    ///   - clock: the time of every use case (tests set it to their tokens' moment).
    ///   - appleKeys: Apple's keys; by default fetched from the configured base URL.
    ///   - metrics: where the metrics go, served at `GET /metrics`; nil serves no metrics (they go to
    ///     the metrics system's factory, which records nothing unless bootstrapped).
    ///   - extraRoutes: adds routes after the standard ones (tests use it).
    package init(
        config: AppConfig, logger: Logger, clock: any WallClock = SystemClock(), appleKeys: (any AppleKeySource)? = nil,
        metrics: PrometheusExporter? = nil, extraRoutes: (inout Router) -> Void = { _ in }
    ) {
        self.config = config
        self.logger = logger
        let factory = metrics?.factory ?? MetricsSystem.factory
        let identityMetrics = IdentityMetrics(factory: factory)
        self.core = IdentityCore(
            apple: config.apple.map {
                AppleServices(settings: $0, keys: appleKeys, clock: clock, logger: logger, metrics: identityMetrics)
            },
            sessions: config.sessions,
            database: config.database, webhooks: config.webhooks, clock: clock, metrics: identityMetrics,
            collections: DeclaredCollections(config.syncSchema))
        requestMetrics = RequestMetrics(workers: config.workerThreads, factory: factory)
        var router = Application.routes(page: config.page, domainAssociation: config.domainAssociation)
        // Not part of the HTTP contract: an operator's endpoint, which nginx serves to loopback only.
        if let metrics { router.add([MetricsEndpoint(exporter: metrics).route]) }
        extraRoutes(&router)
        self.router = router
    }

    /// The HTTP contract's routes (docs/openapi.yaml documents exactly these, nginx/siwa-locations.conf
    /// passes each to siwa), with what the account page shows of the app and Apple's
    /// domain-association file, if one is configured. Each file of routes declares its own.
    package static func routes(page: PageSettings = PageSettings(), domainAssociation: DomainAssociation? = nil) -> Router {
        var router = Router()
        router.add(HealthRoute.routes)
        router.add(NativeSignInRoutes.routes)
        router.add(GuestAndLinkTokenRoutes.routes)
        router.add(AccountRoutes.routes)
        router.add(WebSignInRoutes.routes)
        router.add(AppCallbackRoutes.routes)
        router.add(AppSignInRoutes.routes)
        router.add([page.route, DomainAssociationRoute(domainAssociation).route])
        router.add(AppleNotificationRoutes.routes)
        router.add(SyncRoutes.routes)
        return router
    }

    /// Apple's services; nil when Apple is not configured.
    package var apple: AppleServices? { core.apple }

    /// The worker pool settings derived from the configuration.
    package var workerPoolConfiguration: WorkerPoolConfiguration {
        WorkerPoolConfiguration(
            threads: config.workerThreads, headerNames: Application.headerNames, maxBodyBytes: config.maxBodyBytes)
    }

    /// Creates the handler of one worker thread (call on that thread). Its database connection opens
    /// lazily, so workers start even while the database is down.
    package func makeWorker(index: Int) -> Worker {
        var logger = self.logger
        logger[metadataKey: "worker"] = "\(index)"
        let context = WorkerContext(core: core, database: config.database, logger: logger)
        return Worker(
            router: router, useCases: UseCases(context: context), metrics: requestMetrics, maximumBodyBytes: config.maxBodyBytes,
            crossOrigin: CrossOrigin(origins: config.corsOrigins))
    }

    /// Stops and joins the threads of the use cases' shared core (`IdentityCore.services`), which
    /// close their connections, for those that start none of them themselves (tests). `siwa serve`
    /// stops them with its `ServiceGroup` instead. Call after the workers stopped.
    package func stop() {
        core.stop()
    }
}

/// One worker thread's request handler: finds the request's route, applies its attributes (body
/// limit, access, the style of its answers), maps every error to a JSON response (a page on a
/// browser's route), answers and decorates for the pages of other origins (`CrossOrigin`), and
/// counts and logs each request (its route, status and duration).
package final class Worker: RequestHandler {
    private let router: Router
    private let useCases: UseCases
    private let metrics: RequestMetrics
    /// `SIWA_MAX_BODY_BYTES`: the limit of the route that accepts the largest bodies.
    private let maximumBodyBytes: Int
    /// `SIWA_CORS_ORIGINS` and the routes open to them.
    private let crossOrigin: CrossOrigin

    init(router: Router, useCases: UseCases, metrics: RequestMetrics, maximumBodyBytes: Int, crossOrigin: CrossOrigin) {
        self.router = router
        self.useCases = useCases
        self.metrics = metrics
        self.maximumBodyBytes = maximumBodyBytes
        self.crossOrigin = crossOrigin
    }

    package func respond(to request: Request) -> Response {
        let started = ContinuousClock.now
        metrics.busyWorkers.increment()
        defer { metrics.busyWorkers.decrement() }
        var route = "unmatched"
        var response: Response
        let lookup = router.lookup(request)
        // A browser's preflight (OPTIONS) of a route open to other origins: answered here, no handler.
        if let preflight = crossOrigin.preflight(request, pattern: lookup.attributes?.pattern) {
            answered(request, route: lookup.attributes?.pattern ?? route, status: preflight.status, since: started)
            return preflight
        }
        do {
            // nginx's auth_request check turns any answer but 2xx, 401 and 403 into a 500: there a
            // repeated Origin is refused by the Origin rule (403), as no Origin of ours would be.
            if lookup.attributes?.access != .authRequest,
                let repeated = Application.singleHeaders.first(where: { request.headers.count(of: $0) > 1 })
            {
                throw HTTPError.badRequest("Send one \(repeated) header, not several")
            }
            let (found, context) = try lookup.route()
            route = found.pattern
            guard request.body.count <= min(found.bodyLimits.bytes, maximumBodyBytes) else { throw HTTPError.payloadTooLarge }
            response = try useCases.context.perform(queued: request.queued) {
                try found.access.admit(request, useCases)
                return try found.handler(request, context, useCases)
            }
        } catch {
            let refusal = ErrorResponses.response(for: error, request: request, logger: useCases.context.logger)
            response = lookup.attributes?.answers == .page ? WebSignInRoutes.page(showing: refusal) : refusal
        }
        if lookup.attributes?.answers == .tokenEndpoint { response = AppSignInRoutes.tokenEndpointAnswer(response) }
        crossOrigin.decorate(&response, for: request, pattern: lookup.attributes?.pattern)
        answered(request, route: route, status: response.status, since: started)
        return response
    }

    package func respond(toUnreadableRequest error: FastCGIError) -> Response {
        let response: Response =
            switch error.code {
            case .bodyTooLarge: .error(HTTPError.payloadTooLarge)
            default: .error(HTTPError.badRequest("The request body could not be read"))
            }
        answered(nil, route: "unreadable", status: response.status, since: .now)
        return response
    }

    /// Counts the request and logs it at info: its id (nginx's `$request_id`), route, status and
    /// milliseconds; never its path parameters, query or headers.
    private func answered(_ request: Request?, route: String, status: Int, since start: ContinuousClock.Instant) {
        metrics.answered(route: route, status: status, since: start)
        guard useCases.context.logger.logLevel <= .info else { return }
        let elapsed = (ContinuousClock.now - start).components
        useCases.context.logger.info(
            "request",
            metadata: [
                "request.id": "\(request?.headers["x-request-id"] ?? "-")", "method": "\(request?.method ?? "-")", "route": "\(route)",
                "status": "\(status)",
                "duration_ms": "\(Double(elapsed.seconds * 1000) + Double(elapsed.attoseconds / 1_000_000_000_000) / 1000)",
            ])
    }

    package func close() {
        useCases.context.close()
    }
}
