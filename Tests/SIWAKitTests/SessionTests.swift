import Foundation
import SIWAKit
import SIWATestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The session manager and the authenticated requests, against a stand-in that counts requests.
@Suite(.timeLimit(.minutes(1))) struct SessionTests {
    @Test("100 concurrent callers of an expired access token cause exactly one refresh; all get its token")
    func singleFlight() async throws {
        let serial = Locked(0)
        let harness = try ClientHarness { request in
            let next = serial.increment()
            return request.path == "/auth/apple" ? Answers.signIn(next) : Answers.refresh(next, delay: 0.3)
        }
        try await harness.signIn()
        harness.clock.advance(901)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await harness.client.session.accessToken() } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(harness.count("POST", "/auth/refresh") == 1)
        #expect(Set(tokens) == ["access-2"])
        #expect(harness.server.receivedRequests.last?.bodyText.contains("refresh-1") == true)
    }

    @Test("A token is refreshed ahead of its expiry, not before the margin")
    func refreshAhead() async throws {
        let serial = Locked(0)
        let harness = try ClientHarness { request in
            let next = serial.increment()
            return request.path == "/auth/apple" ? Answers.signIn(next) : Answers.refresh(next)
        }
        try await harness.signIn()
        harness.clock.advance(900 - 61)
        #expect(try await harness.client.session.accessToken() == "access-1")
        harness.clock.advance(2)
        #expect(try await harness.client.session.accessToken() == "access-2")
        #expect(harness.count("POST", "/auth/refresh") == 1)
    }

    @Test(
        "A refresh whose connection broke before the answer is sent once more, with the same token",
        arguments: [TestHTTPServer.Response.connectionReset, .connectionClosed])
    func refreshReplayedAfterBrokenConnection(broken: TestHTTPServer.Response) async throws {
        let refreshes = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/auth/refresh" else { return Answers.signIn(1) }
            return refreshes.increment() == 1 ? broken : Answers.refresh(2)
        }
        try await harness.signIn()
        harness.clock.advance(901)
        #expect(try await harness.client.session.accessToken() == "access-2")
        let bodies = harness.server.receivedRequests.filter { $0.path == "/auth/refresh" }.map(\.bodyText)
        #expect(bodies.count == 2 && bodies[0] == bodies[1], "\(bodies)")
    }

    @Test("A refresh that meets a network error twice keeps the session; the next call refreshes")
    func networkErrorKeepsSession() async throws {
        let refreshes = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/auth/refresh" else { return Answers.signIn(1) }
            return refreshes.increment() <= 2 ? .connectionReset : Answers.refresh(2)
        }
        try await harness.signIn()
        harness.clock.advance(901)
        await #expect {
            try await harness.client.session.accessToken()
        } throws: { error in
            if case SIWAError.network = error { true } else { false }
        }
        #expect(await harness.client.session.state.user?.id == "7")
        #expect(try harness.storage.read("session") != nil)
        #expect(try await harness.client.session.accessToken() == "access-2")
        #expect(harness.count("POST", "/auth/refresh") == 3, "sent, sent once more after the broken connection, then by the next call")
    }

    @Test("token_reused from a refresh signs out: the state stream says why and the stored session is gone")
    func tokenReusedSignsOut() async throws {
        let harness = try ClientHarness { request in
            request.path == "/auth/refresh" ? Answers.error(401, "token_reused") : Answers.signIn(1)
        }
        try await harness.signIn()
        var states = await harness.client.session.states().makeAsyncIterator()
        #expect(await states.next()?.user?.id == "7")
        harness.clock.advance(901)
        await #expect(throws: SIWAError.signedOut) { try await harness.client.session.accessToken() }
        #expect(await states.next() == .signedOut(.refreshTokenReused))
        #expect(try harness.storage.read("session") == nil)
        await #expect(throws: SIWAError.signedOut) { try await harness.client.me() }
    }

    @Test("A revoked session (401 invalid_token on refresh) signs out as sessionEnded")
    func revokedSessionSignsOut() async throws {
        let harness = try ClientHarness { request in
            switch request.path {
            case "/auth/apple": Answers.signIn(1)
            default: Answers.error(401, "invalid_token")
            }
        }
        try await harness.signIn()
        await #expect(throws: SIWAError.signedOut) { try await harness.client.me() }
        #expect(await harness.client.session.state == .signedOut(.sessionEnded))
        #expect(harness.count("GET", "/auth/me") == 1, "no retry without a new token")
        #expect(harness.count("POST", "/auth/refresh") == 1)
    }

    @Test("A 401 on a request triggers one refresh and one retry with the new token")
    func unauthorizedRetriesOnce() async throws {
        let harness = try ClientHarness { request in
            switch (request.method, request.path) {
            case ("POST", "/auth/apple"): Answers.signIn(1)
            case ("POST", "/auth/refresh"): Answers.refresh(2)
            default:
                request.headers["authorization"] == "Bearer access-2"
                    ? Answers.json(200, Answers.me) : Answers.error(401, "invalid_token")
            }
        }
        try await harness.signIn()
        let user = try await harness.client.me()
        #expect(user.firstName == "Jane")
        #expect(harness.count("GET", "/auth/me") == 2)
        #expect(harness.count("POST", "/auth/refresh") == 1)
    }

    @Test("A 401 after the retry is returned, not retried again")
    func unauthorizedTwice() async throws {
        let harness = try ClientHarness { request in
            switch request.path {
            case "/auth/apple": Answers.signIn(1)
            case "/auth/refresh": Answers.refresh(2)
            default: Answers.error(401, "invalid_token")
            }
        }
        try await harness.signIn()
        await #expect(throws: SIWAError.server(ServerError(status: 401, code: "invalid_token", message: "invalid_token"))) {
            try await harness.client.me()
        }
        #expect(harness.count("GET", "/auth/me") == 2)
    }

    @Test("A connection reset is retried once on an idempotent request, never on a POST")
    func connectionReset() async throws {
        let resets = Locked(["GET": 0, "POST": 0])
        let harness = try ClientHarness { request in
            if request.path == "/auth/apple" { return Answers.signIn(1) }
            let count = resets.update { counts in
                counts[request.method, default: 0] += 1
                return counts[request.method]!
            }
            return count == 1 || request.method == "POST" ? .connectionReset : Answers.json(200, Answers.me)
        }
        try await harness.signIn()
        #expect(try await harness.client.me().id == "7")
        #expect(harness.count("GET", "/auth/me") == 2)

        var post = URLRequest(url: URL(string: harness.server.baseURL + "/api/lessons")!)
        post.httpMethod = "POST"
        await #expect {
            try await harness.client.send(post)
        } throws: { error in
            if case SIWAError.network = error { true } else { false }
        }
        #expect(harness.count("POST", "/api/lessons") == 1)
    }

    @Test("The access token goes to the server's host and the named API hosts only, over HTTPS")
    func tokenStaysHome() async throws {
        let harness = try ClientHarness { _ in Answers.signIn(1) }
        try await harness.signIn()
        for url in ["https://tracker.example/collect", "http://api.example.com/x"] {
            await #expect(throws: SIWAError.untrustedHost(url)) { try await harness.client.send(URLRequest(url: URL(string: url)!)) }
        }
        #expect(harness.server.receivedRequests.count == 1, "nothing but the sign-in was sent")
        let named = SIWAClient(
            baseURL: URL(string: harness.server.baseURL + "/")!, storage: harness.storage, apiHosts: ["api.example.com"])
        await #expect(throws: SIWAError.untrustedHost("http://api.example.com/x")) {
            try await named.send(URLRequest(url: URL(string: "http://api.example.com/x")!))
        }
    }

    @Test("The name of the first authorization is sent again after a failed first exchange, then forgotten")
    func nameResent() async throws {
        let attempts = Locked(0)
        let harness = try ClientHarness { _ in
            attempts.increment() == 1 ? Answers.error(503, "unavailable") : Answers.signIn(1)
        }
        await #expect(throws: SIWAError.self) { try await harness.signIn(givenName: "Jane") }
        try await harness.signIn()  // Apple gives no name the second time
        try await harness.signIn()
        let bodies = harness.server.receivedRequests.map(\.bodyText)
        #expect(bodies.count == 3)
        #expect(bodies[0].contains(#""givenName":"Jane""#))
        #expect(bodies[1].contains(#""givenName":"Jane""#), "the kept name goes with the retry")
        #expect(!bodies[2].contains("fullName"), "forgotten once a sign-in carrying it succeeded")
    }

    @Test("A kept name is not sent with another Apple user's sign-in")
    func nameOfAnotherUser() async throws {
        let attempts = Locked(0)
        let harness = try ClientHarness { _ in
            attempts.increment() == 1 ? Answers.error(503, "unavailable") : Answers.signIn(1)
        }
        await #expect(throws: SIWAError.self) { try await harness.signIn(givenName: "Jane") }
        let other = AppleSignInCredential(identityToken: "h.p.s", authorizationCode: nil, user: "009999.other.0001")
        try await harness.client.signIn(with: other, nonce: SignInNonce())
        #expect(!harness.server.receivedRequests[1].bodyText.contains("fullName"))
    }

    @Test("The session is kept across launches in the storage")
    func sessionPersists() async throws {
        let storage = MemoryStorage()
        let first = try ClientHarness(storage: storage) { _ in Answers.signIn(1) }
        try await first.signIn()
        let relaunched = SIWAClient(baseURL: URL(string: first.server.baseURL + "/")!, storage: storage, now: { first.clock.now })
        #expect(await relaunched.session.state.user?.id == "7")
        #expect(await relaunched.session.appleUserID == "001234.abc.0001")
        #expect(try await relaunched.session.accessToken() == "access-1")
    }

    @Test("Apple's credential revoked: logout on the server, signed out on the device; transferred is reported")
    func credentialState() async throws {
        let harness = try ClientHarness { request in
            request.path == "/auth/logout" ? Answers.json(200, #"{"ok":true}"#) : Answers.signIn(1)
        }
        try await harness.signIn()
        #expect(await harness.client.handleCredentialState(.authorized) == .unchanged)
        #expect(await harness.client.handleCredentialState(.transferred) == .transferred)
        #expect(harness.count("POST", "/auth/logout") == 0)
        #expect(await harness.client.handleCredentialState(.revoked) == .signedOut)
        #expect(harness.count("POST", "/auth/logout") == 1)
        #expect(harness.server.receivedRequests.last?.headers["authorization"] == "Bearer access-1")
        #expect(await harness.client.session.state == .signedOut(.appleCredentialRevoked))
        #expect(await harness.client.handleCredentialState(.notFound) == .unchanged, "nobody is signed in any more")
    }

    @Test("Deleting the account signs out only when the server deleted it")
    func deleteAccount() async throws {
        let deletes = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/auth/account" else { return Answers.signIn(1) }
            return deletes.increment() == 1 ? Answers.error(503, "unavailable") : Answers.json(200, #"{"deleted":true}"#)
        }
        try await harness.signIn()
        await #expect(throws: SIWAError.self) { try await harness.client.deleteAccount() }
        #expect(await harness.client.session.state.user != nil)
        try await harness.client.deleteAccount()
        #expect(await harness.client.session.state == .signedOut(.accountDeleted))
    }
}
