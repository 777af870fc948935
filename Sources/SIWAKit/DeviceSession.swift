public import Foundation

/// One session of the user, as `GET /auth/sessions` lists it.
public struct DeviceSession: Sendable, Equatable, Codable, Identifiable {
    /// The server's id of the session: what `SIWAClient.revokeSession(id:)` takes.
    public var id: String
    /// The device label given at sign-in.
    public var device: String?
    /// `native` (an app) or `web` (the browser sign-in).
    public var kind: String
    /// The session this client is using.
    public var current: Bool
    /// When the session began (its sign-in).
    public var createdAt: Date
    /// When the session was last used: its sign-in or its latest token refresh.
    public var lastUsedAt: Date
    /// When the session ends unless it is used before; each token refresh moves this later, up to
    /// the longest lifetime the server allows a session.
    public var expiresAt: Date
}
