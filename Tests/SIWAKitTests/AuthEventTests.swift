import Foundation
import SIWAKit
import SIWATestSupport
import Testing

/// What an app binds to: the session's events, each once and only on a change; the state read
/// without `await`; the `@Observable` model.
@Suite(.timeLimit(.minutes(1))) struct AuthEventTests {
    /// A server that signs in, refreshes, logs out, and answers /auth/me with the same user once,
    /// then with a new first name.
    static func harness() throws -> ClientHarness {
        let serial = Locked(0)
        let mes = Locked(0)
        return try ClientHarness { request in
            switch request.path {
            case "/auth/apple": return Answers.signIn(serial.increment())
            case "/auth/refresh": return Answers.refresh(serial.increment())
            case "/auth/logout": return TestHTTPServer.Response(status: 204, headers: [], body: "")
            default:
                let renamed = Answers.user.replacingOccurrences(of: "Jane", with: "Janet")
                return Answers.json(200, #"{"user":\#(mes.increment() == 1 ? Answers.user : renamed),"sessionId":"12"}"#)
            }
        }
    }

    @Test("Sign-in, me() with no change, refresh, a changed user, sign-out: exactly four events, in order")
    func eventsInOrder() async throws {
        let harness = try Self.harness()
        let session = harness.client.session
        var events = await session.events().makeAsyncIterator()
        try await harness.signIn()
        let jane = try #require(session.currentUser)
        _ = try await harness.client.me()
        harness.clock.advance(901)
        _ = try await session.accessToken()
        let janet = try await harness.client.me()
        await harness.client.signOut()
        // A second sign-in: its event comes next, so nothing came between.
        try await harness.signIn()
        var seen: [AuthEvent] = []
        while let event = await events.next() {
            seen.append(event)
            if seen.count > 1 && event == .signedIn(jane) { break }
        }
        #expect(janet.firstName == "Janet")
        #expect(seen == [.signedIn(jane), .tokenRefreshed, .userUpdated(janet), .signedOut(.signedOut), .signedIn(jane)])
    }

    @Test("The state, the user and the session id read without await follow every change")
    func readSynchronously() async throws {
        let harness = try Self.harness()
        let session = harness.client.session
        #expect(session.currentState == .signedOut(.neverSignedIn) && session.currentUser == nil && session.currentSessionID == nil)
        try await harness.signIn()
        #expect(session.currentUser?.firstName == "Jane" && session.currentSessionID == "12")
        _ = try await harness.client.me()
        _ = try await harness.client.me()
        #expect(session.currentUser?.firstName == "Janet")
        await harness.client.signOut()
        #expect(session.currentState == .signedOut(.signedOut) && session.currentUser == nil && session.currentSessionID == nil)
    }

    #if canImport(Observation) && os(Linux)
        // Apple's platforms need iOS 17 or macOS 14 for it; the package supports earlier ones.
        @MainActor
        @Test("AccountModel follows the session while its task runs: signed in, renamed, signed out")
        func observableModel() async throws {
            let harness = try Self.harness()
            let model = AccountModel(client: harness.client)
            #expect(model.state == .signedOut(.neverSignedIn) && model.lastEvent == nil)
            let following = Task { await model.follow() }
            defer { following.cancel() }
            try await harness.signIn()
            let signedIn = await eventuallyOnMain(within: 5) { model.user?.firstName == "Jane" }
            #expect(signedIn)
            _ = try await harness.client.me()
            _ = try await harness.client.me()
            let renamed = await eventuallyOnMain(within: 5) { model.user?.firstName == "Janet" }
            #expect(renamed)
            #expect(model.lastEvent == .userUpdated(try #require(model.user)))
            await harness.client.signOut()
            let signedOut = await eventuallyOnMain(within: 5) { model.state == .signedOut(.signedOut) }
            #expect(signedOut)
        }
    #endif
}
