import Foundation
import SIWAKit
import SIWATestSupport

/// A siwa stand-in for the client's tests: a `TestHTTPServer` whose handler the test writes, with
/// grants shaped like the server's and a settable clock.
final class ClientHarness: Sendable {
    let server: TestHTTPServer
    let storage: any KeyValueStorage
    let clock = TestClock()
    let client: SIWAClient

    init(storage: any KeyValueStorage = MemoryStorage(), handler: @escaping @Sendable (TestHTTPServer.Request) -> TestHTTPServer.Response)
        throws
    {
        server = try TestHTTPServer(handler: handler)
        self.storage = storage
        let clock = self.clock
        client = SIWAClient(baseURL: URL(string: server.baseURL + "/")!, storage: storage, now: { clock.now })
    }

    deinit { server.stop() }

    /// Requests received for `path`.
    func count(_ method: String, _ path: String) -> Int {
        server.receivedRequests.filter { $0.method == method && $0.path == path }.count
    }

    /// Signs in with a credential the stand-in accepts.
    func signIn(givenName: String? = nil) async throws {
        let credential = AppleSignInCredential(
            identityToken: "header.payload.signature", authorizationCode: "code", user: "001234.abc.0001", givenName: givenName)
        try await client.signIn(with: credential, nonce: SignInNonce())
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    private let current = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.value }
    func advance(_ seconds: TimeInterval) { current.update { $0 = $0.addingTimeInterval(seconds) } }
}

/// A value shared between the test and the server's handler thread.
final class Locked<Value: Sendable>: @unchecked Sendable {  // `value` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    @discardableResult func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored) } }
}

extension Locked where Value == Int {
    /// Adds one and returns the new count.
    func increment() -> Int {
        update { count in
            count += 1
            return count
        }
    }
}

/// Answers of the stand-in, shaped like siwa's.
enum Answers {
    static let user = #"{"id":"7","firstName":"Jane","createdAt":1800000000,"emails":[]}"#
    static let me = #"{"user":\#(user),"sessionId":"12"}"#

    /// A sign-in grant whose tokens end with `serial`.
    static func signIn(_ serial: Int) -> TestHTTPServer.Response {
        json(200, grantFields(serial) + #","user":\#(user),"isNewUser":true}"#)
    }

    /// A refresh grant whose tokens end with `serial`.
    static func refresh(_ serial: Int, delay: Double = 0) -> TestHTTPServer.Response {
        var response = json(200, grantFields(serial) + "}")
        response.delay = delay
        return response
    }

    static func error(_ status: Int, _ code: String) -> TestHTTPServer.Response {
        json(status, #"{"error":"\#(code)","message":"\#(code)"}"#)
    }

    static func json(_ status: Int, _ body: String) -> TestHTTPServer.Response {
        TestHTTPServer.Response(status: status, headers: [("Content-Type", "application/json")], body: body)
    }

    private static func grantFields(_ serial: Int) -> String {
        #"{"accessToken":"access-\#(serial)","tokenType":"Bearer","expiresIn":900,"refreshToken":"refresh-\#(serial)","sessionId":"12""#
    }
}
