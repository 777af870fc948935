/// The real Apple data in `vectors/apple`, decoded: identity tokens and server-to-server
/// notifications, each with the moment at which it is valid.
public enum AppleFixtures {
    /// A real identity token and the claims the tests compare with.
    public struct RealToken: Decodable, Sendable {
        public let id: String
        public let token: String
        public let kid: String
        public let aud: String
        public let sub: String
        public let iat: Double
        public let exp: Double
        /// A moment within the token's validity.
        public let suggested_fixed_clock: Double
    }

    /// A real notification payload and what it says.
    public struct Notification: Decodable, Sendable {
        public let id: String
        public let payload_jwt: String
        public let aud: String
        public let event_type: String
        public let event_time_ms: Double
        /// A moment within the payload's validity.
        public let suggested_fixed_clock: Double
    }

    /// Every real identity token.
    public static func tokens() throws -> [RealToken] {
        struct File: Decodable { let tokens: [RealToken] }
        return try Fixtures.decode(File.self, from: "apple/apple_identity_tokens.json").tokens
    }

    /// The real identity token `id`.
    public static func token(_ id: String) throws -> RealToken {
        guard let token = try tokens().first(where: { $0.id == id }) else { throw MissingFixture(name: id) }
        return token
    }

    /// Every real notification.
    public static func notifications() throws -> [Notification] {
        struct File: Decodable { let notifications: [Notification] }
        return try Fixtures.decode(File.self, from: "apple/apple_server_notifications.json").notifications
    }

    /// The real notification `id`.
    public static func notification(_ id: String) throws -> Notification {
        guard let notification = try notifications().first(where: { $0.id == id }) else { throw MissingFixture(name: id) }
        return notification
    }

    /// The key set of Apple's signing keys found with the tokens, as bytes of a JWK Set.
    public static func keySet() throws -> [UInt8] {
        Array(try Fixtures.data("apple/apple_public_keys.json"))
    }

    /// A fixture that is not in the files.
    public struct MissingFixture: Error, CustomStringConvertible {
        public let name: String
        public var description: String { "no fixture \(name)" }
    }
}
