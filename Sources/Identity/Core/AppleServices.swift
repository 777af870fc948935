package import AppleID
import CoreMetrics
import HTTPClient
package import Logging
import Telemetry

/// The process-wide Sign in with Apple parts, shared by every worker thread: Apple's keys, the
/// identity-token and notification verifiers on them, and the client-secret factory.
package final class AppleServices: Sendable {
    package let settings: AppleSettings
    package let keys: any AppleKeySource
    package let identityTokens: IdentityTokenVerifier
    package let notifications: NotificationVerifier
    package let clientSecrets: ClientSecretFactory
    /// Bounds the request-time calls to Apple (code exchanges) and stops them for a while after
    /// Apple could not be reached.
    package let calls: AppleCallGate

    /// - Parameters:
    ///   - settings: the Apple settings.
    ///   - keys: where Apple's keys come from; by default the shared cache that fetches them from
    ///     `settings.baseURL` (tests give a fixed key set).
    ///   - clock: the time of client secrets and of the key cache.
    ///   - logger: where failed fetches of Apple's keys are logged.
    package init(
        settings: AppleSettings, keys: (any AppleKeySource)? = nil, clock: any WallClock = SystemClock(),
        logger: Logger = Logger(label: "siwa.apple"), metrics: IdentityMetrics = IdentityMetrics()
    ) {
        self.settings = settings
        let keys = keys ?? AppleServices.keyCache(settings, clock: clock, logger: logger, metrics: metrics)
        self.keys = keys
        identityTokens = IdentityTokenVerifier(keys: keys, policy: settings.identityTokenPolicy)
        notifications = NotificationVerifier(keys: keys, policy: settings.identityTokenPolicy)
        clientSecrets = ClientSecretFactory(
            teamID: settings.teamID, keyID: settings.keyID, privateKey: settings.privateKey,
            lifetime: settings.clientSecretLifetime, clock: { clock.now() })
        calls = AppleCallGate(
            limit: settings.maximumCallsInFlight, waiting: settings.maximumCallsWaiting, wait: settings.callWait,
            cooldown: settings.unreachableCooldown, clock: clock)
    }

    /// The cache of Apple's keys, fetched from `GET /auth/keys` of the base URL.
    private static func keyCache(_ settings: AppleSettings, clock: any WallClock, logger: Logger, metrics: IdentityMetrics) -> AppleKeyCache
    {
        var cacheSettings = AppleKeyCache.Settings()
        cacheSettings.cooldown = settings.keysCooldown
        cacheSettings.waitTimeout = settings.http.timeout
        let baseURL = settings.baseURL
        let http = settings.http
        // Fetches are rare (lifetime, rotation, cooldown), so each uses its own short-lived handle.
        return AppleKeyCache(
            settings: cacheSettings, clock: { clock.now() },
            fetch: {
                do {
                    let fetched = try AppleClient.fetchKeys(baseURL: baseURL, http: HTTPClient(configuration: http))
                    metrics.keyFetches["ok"].increment()
                    return fetched
                } catch {
                    metrics.keyFetches[IdentityMetrics.code(of: error)].increment()
                    logger.warning("fetching Apple's keys failed; the cached keys stay in use", metadata: ["error": "\(error)"])
                    throw error
                }
            })
    }

    /// A client for Apple's endpoints, for one thread.
    package func makeClient() -> AppleClient {
        AppleClient(baseURL: settings.baseURL, http: HTTPClient(configuration: settings.http), secrets: clientSecrets)
    }
}
