/// What `AccountModel` and `AccountObject` share: a client, the state and the last event it
/// follows, written only by `follow()`.
@MainActor
protocol SessionFollower: AnyObject {
    var client: SIWAClient { get }
    var state: AuthState { get set }
    var lastEvent: AuthEvent? { get set }
}

extension SessionFollower {
    /// Follows `client`'s session until the calling task is cancelled.
    func followSession() async {
        await client.session.follow { event, state in
            self.lastEvent = event ?? self.lastEvent
            self.state = state
        }
    }
}

#if canImport(Observation)
    public import Observation

    /// The session as a SwiftUI view binds to it, on iOS 17, macOS 14 and later (`@Observable`):
    /// `state` and `user` follow the client's session, `lastEvent` says what last happened.
    ///
    /// Start following in the view that owns it, `.task { await model.follow() }`: the model then
    /// changes on the main actor at each event of `SessionManager.events()`, and stops when the task
    /// is cancelled. For iOS 15 and 16, `AccountObject` is the same as an `ObservableObject`.
    @available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
    @MainActor @Observable
    public final class AccountModel: SessionFollower {
        /// The client whose session this follows; call it for everything else.
        public let client: SIWAClient
        /// Signed in (with the user) or signed out (with why).
        public internal(set) var state: AuthState
        /// The last change of the session, nil until one happens while following.
        public internal(set) var lastEvent: AuthEvent?

        /// A model of `client`'s session, starting from its current state.
        /// - Parameter client: the client whose session the model follows.
        public init(client: SIWAClient) {
            self.client = client
            self.state = client.session.currentState
        }

        /// The signed-in person; nil when signed out.
        public var user: User? { state.user }

        /// Follows the session until the calling task is cancelled.
        public func follow() async { await followSession() }
    }
#endif

#if canImport(Combine)
    public import Combine

    /// The session as a SwiftUI view binds to it on iOS 15 and 16 (`ObservableObject`): the same as
    /// `AccountModel`. Combine exists only on Apple's platforms, so this type is not compiled by the
    /// Linux test suite.
    @MainActor
    public final class AccountObject: ObservableObject, SessionFollower {
        /// The client whose session this follows; call it for everything else.
        public let client: SIWAClient
        /// Signed in (with the user) or signed out (with why).
        @Published public internal(set) var state: AuthState
        /// The last change of the session, nil until one happens while following.
        @Published public internal(set) var lastEvent: AuthEvent?

        /// A model of `client`'s session, starting from its current state.
        /// - Parameter client: the client whose session the model follows.
        public init(client: SIWAClient) {
            self.client = client
            self.state = client.session.currentState
        }

        /// The signed-in person; nil when signed out.
        public var user: User? { state.user }

        /// Follows the session until the calling task is cancelled.
        public func follow() async { await followSession() }
    }
#endif
