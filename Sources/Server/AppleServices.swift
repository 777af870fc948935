package import AppleID
import Foundation
import HTTPClient

/// The process-wide Sign in with Apple parts, shared by every worker thread: Apple's key cache,
/// the identity-token verifier on it, and the client-secret factory.
package final class AppleServices: Sendable {
    package let settings: AppleSettings
    package let keys: AppleKeyCache
    package let identityTokens: IdentityTokenVerifier
    package let notifications: NotificationVerifier
    package let clientSecrets: ClientSecretFactory

    package init(settings: AppleSettings) {
        self.settings = settings
        var cacheSettings = AppleKeyCache.Settings()
        cacheSettings.cooldown = settings.keysCooldown
        cacheSettings.waitTimeout = settings.http.timeout
        let baseURL = settings.baseURL, http = settings.http
        // Fetches are rare (lifetime, rotation, cooldown), so each uses its own short-lived handle.
        keys = AppleKeyCache(settings: cacheSettings) {
            try AppleClient.fetchKeys(baseURL: baseURL, http: HTTPClient(configuration: http))
        }
        identityTokens = IdentityTokenVerifier(keys: keys, policy: settings.identityTokenPolicy)
        notifications = NotificationVerifier(keys: keys, policy: settings.identityTokenPolicy)
        clientSecrets = ClientSecretFactory(
            teamID: settings.teamID, keyID: settings.keyID, privateKey: settings.privateKey,
            lifetime: settings.clientSecretLifetime)
    }

    /// A client for Apple's endpoints, for one worker thread.
    package func makeClient() -> AppleClient {
        AppleClient(baseURL: settings.baseURL, http: HTTPClient(configuration: settings.http), secrets: clientSecrets)
    }
}
