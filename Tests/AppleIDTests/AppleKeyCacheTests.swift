import AppleID
import Foundation
import JOSE
import SIWATestSupport
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let time = Mutex<Double>(1_700_000_000)
    var now: Double { time.withLock { $0 } }
    func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
}

/// A key server the test controls: what it serves, whether it is down, how slow, and how often it was asked.
final class TestKeyServer: Sendable {
    struct State {
        var keyIDs: [String] = []
        var maxAge: Double? = nil
        var down = false
        var delay: Double = 0
        var calls = 0
    }

    let state = Mutex(State())
    let key: RSAPublicKey

    init(keyIDs: [String]) throws {
        key = try TestSigner.sharedKey().publicKey
        state.withLock { $0.keyIDs = keyIDs }
    }

    var calls: Int { state.withLock { $0.calls } }

    func fetch() throws -> AppleKeyCache.Fetched {
        let (keyIDs, maxAge, down, delay) = state.withLock { state in
            state.calls += 1
            return (state.keyIDs, state.maxAge, state.down, state.delay)
        }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        struct Unreachable: Error {}
        if down { throw Unreachable() }
        let n = Base64URL.encode(key.modulus)
        let e = Base64URL.encode(key.exponent)
        // Keys in any order; an EC key and an encryption key are skipped.
        let members =
            keyIDs.reversed().map { #"{"kty":"RSA","kid":"\#($0)","use":"sig","alg":"RS256","n":"\#(n)","e":"\#(e)"}"# }
            + [
                #"{"kty":"EC","kid":"ec","crv":"P-256","x":"AA","y":"AA"}"#,
                #"{"kty":"RSA","kid":"enc","use":"enc","n":"\#(n)","e":"\#(e)"}"#,
            ]
        return AppleKeyCache.Fetched(body: Array(#"{"keys":[\#(members.joined(separator: ","))]}"#.utf8), maxAge: maxAge)
    }
}

@Suite struct AppleKeyCacheTests {
    func makeCache(_ server: TestKeyServer, _ clock: TestClock) -> AppleKeyCache {
        var settings = AppleKeyCache.Settings()
        settings.cooldown = 10
        settings.minimumLifetime = 300
        settings.maximumLifetime = 86_400
        settings.defaultLifetime = 3_600
        return AppleKeyCache(settings: settings, clock: { clock.now }, fetch: { try server.fetch() })
    }

    /// Waits (bounded) until the cache has stored the outcome of `count` fetches.
    func waitForFetches(_ cache: AppleKeyCache, _ count: Int) {
        #expect(eventually(within: 5) { cache.status.fetchCount >= count }, "\(count) fetches")
    }

    @Test("The first use fetches; later uses are served from the cache")
    func cachesKeys() throws {
        let server = try TestKeyServer(keyIDs: ["A", "B"])
        let cache = makeCache(server, TestClock())
        #expect(cache.status.health == .unavailable)
        #expect(try cache.key(for: "A").keyID == "A")
        #expect(try cache.key(for: "B").keyID == "B")
        #expect(server.calls == 1)
        #expect(cache.status.health == .fresh)
        #expect(cache.status.keyIDs == ["A", "B"])
        #expect(throws: SignInError(.unknownKeyID)) { try cache.key(for: "ec") }
        #expect(throws: SignInError(.unknownKeyID)) { try cache.key(for: "enc") }
    }

    @Test("An unknown kid refetches once Apple has rotated, and removed keys are dropped")
    func refetchOnUnknownKid() throws {
        let server = try TestKeyServer(keyIDs: ["A"])
        let clock = TestClock()
        let cache = makeCache(server, clock)
        _ = try cache.key(for: "A")
        server.state.withLock { $0.keyIDs = ["B"] }
        clock.advance(11)
        #expect(try cache.key(for: "B").keyID == "B")
        #expect(server.calls == 2)
        #expect(throws: SignInError(.unknownKeyID)) { try cache.key(for: "A") }
    }

    @Test("8 threads asking for unknown kids at once cause one fetch; more asks within the cooldown cause none")
    func cooldownUnderConcurrency() throws {
        let server = try TestKeyServer(keyIDs: ["A"])
        server.state.withLock { $0.delay = 0.2 }
        let clock = TestClock()
        let cache = makeCache(server, clock)
        let failures = Mutex(0)
        let done = DispatchGroup()
        for index in 0..<8 {
            done.enter()
            Thread.detachNewThread {
                do {
                    _ = try cache.key(for: "unknown-\(index)")
                } catch {
                    failures.withLock { $0 += 1 }
                }
                done.leave()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(server.calls == 1)
        #expect(failures.withLock { $0 } == 8)
        // Within the cooldown, more unknown kids do not reach the key server at all.
        for index in 0..<100 {
            #expect(throws: SignInError(.unknownKeyID)) { try cache.key(for: "flood-\(index)") }
        }
        #expect(server.calls == 1)
        clock.advance(10)
        #expect(throws: SignInError(.unknownKeyID)) { try cache.key(for: "after-cooldown") }
        #expect(server.calls == 2)
    }

    @Test("While the key server is down, cached keys keep being served after they expire")
    func staleWhileError() throws {
        let server = try TestKeyServer(keyIDs: ["A"])
        let clock = TestClock()
        let cache = makeCache(server, clock)
        _ = try cache.key(for: "A")
        server.state.withLock { $0.down = true }
        clock.advance(3_601)
        #expect(try cache.key(for: "A").keyID == "A")
        waitForFetches(cache, 2)
        #expect(server.calls == 2)
        #expect(try cache.key(for: "A").keyID == "A")
        #expect(cache.status.health == .fetchFailing, "served, but the latest fetch failed")
        #expect(cache.status.lastError != nil)
        // Unknown kids while down: one attempt per cooldown, then fail fast, saying Apple's set
        // could not be fetched (the key may exist at Apple), not that it does not exist.
        clock.advance(11)
        #expect(throws: SignInError(.keysUnavailable)) { try cache.key(for: "B") }
        #expect(throws: SignInError(.keysUnavailable)) { try cache.key(for: "C") }
        waitForFetches(cache, 3)
        #expect(server.calls == 3)
        // Back up: the next expired use refreshes.
        server.state.withLock { $0.down = false }
        clock.advance(11)
        _ = try cache.key(for: "A")
        waitForFetches(cache, 4)
        #expect(cache.status.health == .fresh)
    }

    @Test("A failed fetch shows in the health while the cached keys are still within their lifetime")
    func failingWhileFresh() throws {
        let server = try TestKeyServer(keyIDs: ["A"])
        let clock = TestClock()
        let cache = makeCache(server, clock)
        _ = try cache.key(for: "A")
        #expect(cache.status.health == .fresh)
        server.state.withLock { $0.down = true }
        clock.advance(11)
        #expect(throws: SignInError(.keysUnavailable)) { try cache.key(for: "new-key") }
        #expect(cache.status.health == .fetchFailing)
        #expect(try cache.key(for: "A").keyID == "A", "the cached key is still served")
        server.state.withLock { $0.down = false }
        clock.advance(11)
        #expect(throws: SignInError(.unknownKeyID)) { try cache.key(for: "new-key") }
        #expect(cache.status.health == .fresh, "Apple answered again: a kid it does not have is unknown")
    }

    @Test("With no keys at all and the server down, verification reports keys unavailable")
    func unavailable() throws {
        let server = try TestKeyServer(keyIDs: ["A"])
        server.state.withLock { $0.down = true }
        let cache = makeCache(server, TestClock())
        #expect(throws: SignInError(.keysUnavailable)) { try cache.key(for: "A") }
        #expect(cache.status.health == .unavailable)
    }

    @Test("max-age is honoured between the floor and the ceiling")
    func lifetimes() throws {
        for (maxAge, expected) in [(nil, 3_600.0), (5, 300), (7_200, 7_200), (10_000_000, 86_400)] as [(Double?, Double)] {
            let server = try TestKeyServer(keyIDs: ["A"])
            server.state.withLock { $0.maxAge = maxAge }
            let clock = TestClock()
            let cache = makeCache(server, clock)
            _ = try cache.key(for: "A")
            #expect(cache.status.expiresAt - clock.now == expected)
        }
    }

    @Test("Cache-Control max-age is parsed; no-store and garbage are handled")
    func cacheControl() {
        #expect(CacheControl.maxAge("max-age=86400, must-revalidate") == 86_400)
        #expect(CacheControl.maxAge("public, Max-Age = 60") == 60)
        #expect(CacheControl.maxAge("no-store") == 0)
        #expect(CacheControl.maxAge("max-age=-1") == nil)
        #expect(CacheControl.maxAge("max-age=abc") == nil)
        #expect(CacheControl.maxAge(nil) == nil)
    }

    @Test("A verifier on the cache verifies a token whose key was rotated in after the first fetch")
    func verifierUsesCache() throws {
        let server = try TestKeyServer(keyIDs: ["old"])
        let clock = TestClock()
        let cache = makeCache(server, clock)
        _ = try cache.key(for: "old")
        server.state.withLock { $0.keyIDs = ["old", TestSigner.keyID] }
        clock.advance(11)
        let signer = try TestSigner()
        let verifier = IdentityTokenVerifier(keys: cache, policy: IdentityTokenPolicy(clientIDs: ["com.example.app"]))
        _ = try verifier.verify(try signer.sign(claims: TestSigner.claims()), nonce: "raw-nonce", now: 1_700_000_000)
        #expect(cache.status.fetchCount == 2, "the first fetch, and one refetch for the rotated-in kid")
        _ = try verifier.verify(try signer.sign(claims: TestSigner.claims()), nonce: "raw-nonce", now: 1_700_000_000)
        #expect(cache.status.fetchCount == 2, "a known kid is served from the cache")
    }
}
