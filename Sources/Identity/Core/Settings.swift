package import Accounts
package import AppleID
package import HTTPClient
package import JOSE

/// Sign in with Apple settings, as the configuration read them.
package struct AppleSettings: Sendable {
    package var teamID: String
    package var keyID: String
    /// The `.p8` key, loaded and checked at start.
    package var privateKey: P256PrivateKey
    package var bundleIDs: [String]
    /// The Services ID of siwa's own web pages.
    package var servicesID: String?
    /// The Services IDs whose credentials apps post to `POST /auth/apple`, each with the Return
    /// URLs registered for it at Apple: a code of theirs is exchanged with one of these only.
    package var redirectURIs: [String: [String]]
    /// The apps Apple's form post is relayed to, by the name in their Return URL
    /// (`/auth/app-callback/NAME`).
    package var appCallbacks: [String: AppCallbackTarget]
    package var baseURL: String
    package var http: HTTPClientConfiguration
    package var leeway: Int
    package var requireNonce: Bool
    package var keysCooldown: Double
    package var clientSecretLifetime: Int
    /// Whether Apple's `account-delete` notification deletes the user or anonymises them.
    package var anonymiseOnAccountDelete: Bool
    /// The Hide My Email domains, lowercased (`SIWA_APPLE_RELAY_DOMAINS`): what
    /// `IdentityToken.emailIsPrivateRelay(domains:)` goes by when the token does not say.
    package var relayDomains: [String]
    /// Request-time calls to Apple (code exchanges) in flight at once.
    package var maximumCallsInFlight: Int
    /// Calls that may wait beyond them for a slot, up to `callWait` seconds; more fail at once
    /// with 503.
    package var maximumCallsWaiting: Int
    package var callWait: Double
    /// Seconds no call to Apple is made after one could not reach it.
    package var unreachableCooldown: Double
    /// The daily check of the stored tokens by `siwa jobs`: its rate ceiling and lanes
    /// (`SIWA_APPLE_VALIDATION_RATE`, `SIWA_APPLE_VALIDATION_LANES`).
    package var validationPace: AppleValidationPace
    /// The default of `relayDomains`: Apple's relay domains.
    package static let defaultRelayDomains = IdentityToken.appleRelayDomains

    package init(
        teamID: String, keyID: String, privateKey: P256PrivateKey, bundleIDs: [String], servicesID: String?,
        redirectURIs: [String: [String]] = [:], appCallbacks: [String: AppCallbackTarget] = [:],
        baseURL: String = "https://appleid.apple.com",
        http: HTTPClientConfiguration = HTTPClientConfiguration(), leeway: Int = 60,
        requireNonce: Bool = true, keysCooldown: Double = 10, clientSecretLifetime: Int = 86_400,
        anonymiseOnAccountDelete: Bool = false, relayDomains: [String] = defaultRelayDomains, maximumCallsInFlight: Int = 8,
        maximumCallsWaiting: Int = 2, callWait: Double = 1, unreachableCooldown: Double = 5,
        validationPace: AppleValidationPace = AppleValidationPace()
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKey = privateKey
        self.bundleIDs = bundleIDs
        self.servicesID = servicesID
        self.redirectURIs = redirectURIs
        self.appCallbacks = appCallbacks
        self.baseURL = baseURL
        self.http = http
        self.leeway = leeway
        self.requireNonce = requireNonce
        self.keysCooldown = keysCooldown
        self.clientSecretLifetime = clientSecretLifetime
        self.anonymiseOnAccountDelete = anonymiseOnAccountDelete
        self.relayDomains = relayDomains
        self.maximumCallsInFlight = maximumCallsInFlight
        self.maximumCallsWaiting = maximumCallsWaiting
        self.callWait = callWait
        self.unreachableCooldown = unreachableCooldown
        self.validationPace = validationPace
    }

    /// Every accepted audience: the bundle ids, the web pages' Services ID, and the apps' Services IDs.
    package var clientIDs: Set<String> { Set(bundleIDs + (servicesID.map { [$0] } ?? []) + redirectURIs.keys) }

    /// The `redirect_uri` to exchange a code of `clientID` with, for a credential an app posted
    /// with `requested`: none for a bundle id (Apple refuses one for native codes); for a Services
    /// ID, `requested` when it is registered for it exactly. Checked before Apple is called, so a
    /// refused one costs neither the code nor the nonce.
    /// - Throws: `IdentityError(.redirectURIRefused)` naming what is wrong.
    package func appRedirectURI(_ requested: String?, clientID: String, hasCode: Bool) throws -> String? {
        if bundleIDs.contains(clientID) {
            guard requested == nil else {
                throw IdentityError(
                    .redirectURIRefused, "redirectUri is for a Services ID's credential; this one is for the app \(clientID)")
            }
            return nil
        }
        let registered = redirectURIs[clientID] ?? []
        guard let requested else {
            guard !hasCode else {
                throw IdentityError(
                    .redirectURIRefused,
                    "a code of the Services ID \(clientID) is exchanged with the redirect URI of its authorization: send it as redirectUri")
            }
            return nil
        }
        guard registered.contains(requested) else {
            throw IdentityError(
                .redirectURIRefused, "redirectUri is not a Return URL registered for \(clientID) (SIWA_APPLE_REDIRECT_URIS)")
        }
        return requested
    }

    /// The identity-token rules these settings imply.
    package var identityTokenPolicy: IdentityTokenPolicy {
        IdentityTokenPolicy(clientIDs: clientIDs, leeway: leeway, requireNonce: requireNonce)
    }
}

/// The app's own sessions: access-token keys, the data keys for Apple's tokens, the public origin.
package struct SessionSettings: Sendable {
    /// `https://host[:port]`, without a path or a trailing slash.
    package var publicURL: String
    package var accessTokens: AccessTokens
    package var dataKeys: DataKeys
    /// Seconds a session lives without a refresh.
    package var lifetime: Int
    /// Seconds after which a session ends however often it is refreshed (`SessionSettings.unlimited` for never).
    package var maximumLifetime: Int
    /// The `maximumLifetime` of sessions that end only when unused for `lifetime` (about a century).
    package static let unlimited = Sessions.unlimited
    /// Seconds during which the refresh token rotated last may be presented again (a retry whose
    /// answer was lost) without being taken for reuse; 0 turns it off.
    package var refreshReuseInterval: Int
    /// Whether `POST /auth/guest` makes guest accounts (off unless turned on).
    package var guestAccounts: Bool
    /// Days after which a guest nobody used is purged by `siwa jobs`.
    package var guestRetentionDays: Int
    /// The secrets the app's older backend presents to mint link tokens (any of them is accepted,
    /// so that one can be replaced while the other still works); none turns linking off.
    package var linkSecrets: [[UInt8]]
    /// Seconds a link token can be used.
    package var linkTokenLifetime: Int
    /// The native apps that sign in through the browser (`GET /auth/app/start`), each with its
    /// registered redirect URIs.
    package var appClients: [String: [AppRedirectURI]]

    package init(
        publicURL: String, accessTokens: AccessTokens, dataKeys: DataKeys, lifetime: Int = 7_776_000,
        maximumLifetime: Int = unlimited, refreshReuseInterval: Int = 10, guestAccounts: Bool = false,
        guestRetentionDays: Int = 30, linkSecrets: [[UInt8]] = [], linkTokenLifetime: Int = 600,
        appClients: [String: [AppRedirectURI]] = [:]
    ) {
        self.appClients = appClients
        self.guestAccounts = guestAccounts
        self.guestRetentionDays = guestRetentionDays
        self.linkSecrets = linkSecrets
        self.linkTokenLifetime = linkTokenLifetime
        self.maximumLifetime = maximumLifetime
        self.publicURL = publicURL
        self.accessTokens = accessTokens
        self.dataKeys = dataKeys
        self.lifetime = lifetime
        self.refreshReuseInterval = refreshReuseInterval
    }

    /// The web sign-in's `redirect_uri` (registered at Apple for the Services ID).
    package var callbackURL: String { publicURL + "/auth/callback" }
}

/// The lifecycle webhooks of the app's backend: where events go and how deliveries are signed.
package struct WebhookSettings: Sendable {
    /// The endpoint URLs; every event goes to each.
    package var endpoints: [String]
    /// The signing secrets. Each one signs every delivery (one `v1=` each), so that a receiver can
    /// move to a new secret while the old one is still listed.
    package var secrets: [[UInt8]]
    package var http: HTTPClientConfiguration
    /// Hours a delivery is retried before it is given up (at least 72).
    package var retryHours: Int

    package init(endpoints: [String], secrets: [[UInt8]], http: HTTPClientConfiguration = HTTPClientConfiguration(), retryHours: Int = 72) {
        self.endpoints = endpoints
        self.secrets = secrets
        self.http = http
        self.retryHours = retryHours
    }

    /// Where the operations record events for these endpoints.
    package var outbox: WebhookOutbox { WebhookOutbox(endpoints: endpoints) }
}
