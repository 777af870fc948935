import Foundation

/// A session as the server grants it (`POST /auth/apple`, `POST /auth/refresh`).
struct Grant: Decodable {
    var accessToken: String
    var expiresIn: Int
    var refreshToken: String
    var sessionId: String
    /// Only in a sign-in's answer.
    var user: User?
}

/// The session kept on the device.
struct StoredSession: Codable, Equatable {
    var accessToken: String
    /// When the access token expires, by the device's clock: the time the grant was received plus
    /// `expiresIn` (the device's clock may differ from the server's).
    var accessTokenExpiresAt: Date
    var refreshToken: String
    var sessionID: String
    var user: User
    /// Apple's identifier of the person (the credential's `user`), for Apple's credential state.
    var appleUserID: String?

    init(grant: Grant, user: User, appleUserID: String?, receivedAt: Date) {
        accessToken = grant.accessToken
        accessTokenExpiresAt = receivedAt.addingTimeInterval(TimeInterval(grant.expiresIn))
        refreshToken = grant.refreshToken
        sessionID = grant.sessionId
        self.user = user
        self.appleUserID = appleUserID
    }
}
