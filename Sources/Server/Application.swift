import Accounts
package import FastCGI
package import Logging
import MariaDB

/// The process-wide, immutable part of the application: configuration, routes, logger.
package final class Application: Sendable {
    package let config: AppConfig
    package let router: Router
    package let logger: Logger
    /// Apple's keys, verifier and client secrets; nil when Apple is not configured.
    package let apple: AppleServices?
    /// Batches concurrent sync writes of the worker threads into shared transactions.
    let syncCommits: SyncGroupCommit
    /// The synced state of recently active users, shared by the worker threads.
    let syncCache = SyncCache()

    /// Request headers the handlers read; only these are copied out of the FastCGI parameters.
    /// (`x-request-id` comes from nginx's `REQUEST_ID` parameter, never from the client.)
    package static let headerNames = ["authorization", "cookie", "origin", "user-agent", "accept"]

    /// - Parameters:
    ///   - config: the validated configuration.
    ///   - logger: the root logger.
    ///   - extraRoutes: adds routes after the standard ones (tests use it).
    package init(config: AppConfig, logger: Logger, extraRoutes: (inout Router) -> Void = { _ in }) {
        self.config = config
        self.logger = logger
        self.apple = config.apple.map(AppleServices.init(settings:))
        self.syncCommits = SyncGroupCommit(database: config.database)
        var router = Router()
        router.add("GET", "/health", Health.handle)
        router.add("POST", "/auth/apple", NativeSignIn.signIn)
        router.add("POST", "/auth/refresh", NativeSignIn.refresh)
        router.add("POST", "/auth/logout", AccountRoutes.logout)
        router.add("GET", "/auth/me", AccountRoutes.me)
        router.add("GET", "/auth/sessions", AccountRoutes.sessions)
        router.add("DELETE", "/auth/sessions/{id}", AccountRoutes.revokeSession)
        router.add("DELETE", "/auth/account", AccountRoutes.deleteAccount)
        router.add("GET", "/auth/jwks.json", AccountRoutes.jwks)
        router.add("GET", "/auth/web/start", WebSignIn.start)
        router.add("POST", "/auth/callback", WebSignIn.callback)
        router.add("GET", "/auth/web/complete", WebSignIn.complete)
        router.add("POST", "/webhook/apple", AppleWebhook.handle)
        router.add("POST", "/sync", SyncRoute.handle)
        extraRoutes(&router)
        self.router = router
    }

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
        let database = Connection(configuration: config.database)
        return Worker(application: self, context: WorkerContext(
                database: database, logger: logger, apple: apple, sessions: config.sessions, syncCommits: syncCommits,
                syncCache: syncCache))
    }
}

/// One worker thread's request handler: routes the request and maps every error to a JSON response.
package final class Worker: RequestHandler {
    private let application: Application
    private let context: WorkerContext

    init(application: Application, context: WorkerContext) {
        self.application = application
        self.context = context
    }

    package func respond(to request: Request) -> Response {
        do {
            let (handler, parameters) = try application.router.match(request)
            return try handler(request, parameters, context)
        } catch {
            return response(for: error, request: request)
        }
    }

    package func respond(toUnreadableRequest error: FastCGIError) -> Response {
        switch error.code {
        case .bodyTooLarge: .error(HTTPError.payloadTooLarge)
        default: .error(HTTPError.badRequest("The request body could not be read"))
        }
    }

    package func close() {
        context.database.close()
    }

    /// The one error-to-response mapper (STYLE.md rule 17): client-facing errors as they are, a lost
    /// database as 503, anything else as a generic 500 logged with its details and the request id.
    private func response(for error: any Error, request: Request) -> Response {
        if let error = error as? any ClientFacingError {
            if let error = error as? MethodNotAllowed {
                return .error(error, headers: [("Allow", error.allowed.joined(separator: ", "))])
            }
            return .error(error)
        }
        var metadata: Logger.Metadata = [
            "request.id": "\(request.headers["x-request-id"] ?? "-")",
            "request.path": "\(request.path)",
            "error": "\(String(reflecting: error))",
        ]
        if let error = error as? MariaDBError, error.code == .connectionLost {
            context.logger.warning("database unavailable", metadata: metadata)
            return .error(HTTPError.unavailable)
        }
        metadata["error.type"] = "\(type(of: error))"
        context.logger.error("unhandled error", metadata: metadata)
        return .error(HTTPError.internalError)
    }
}
