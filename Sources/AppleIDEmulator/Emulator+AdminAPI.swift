import FastCGI
import Foundation
import HTTPClient
import JOSE
import StrictJSON
import Synchronization

/// The test-only admin API under `/admin/`, answered only with `Authorization: Bearer <admin
/// secret>` and only when a secret is configured (404 otherwise). JSON in, JSON out.
extension Emulator {
    func admin(_ request: Request) throws -> Response {
        guard let adminSecret else { return Response(status: 404, contentType: "text/plain", body: Array("Not Found\n".utf8)) }
        let presented = request.bearerToken ?? ""
        guard constantTimeEquals(Array(presented.utf8), Array(adminSecret.utf8)) else {
            throw AdminError(401, "unauthorized", "the admin API needs Authorization: Bearer <admin secret>")
        }
        let path = Array(request.path.split(separator: "/").map(String.init).dropFirst())
        let method = request.method
        switch (method, path.count, path.first ?? "") {
        case ("POST", 1, "users"): return try createUser(request)
        case ("GET", 1, "users"): return listUsers()
        case ("GET", 2, "users"): return try showUser(path[1])
        case ("DELETE", 2, "users"): return try deleteUser(path[1])
        case ("POST", 3, "users") where path[2] == "revoke": return try revokeConsent(path[1], request)
        case ("POST", 3, "users") where path[2] == "relay": return try setRelayForwarding(path[1], request)
        case ("POST", 1, "sign-in"): return try nativeSignIn(request)
        case ("POST", 1, "sign-ins"): return try nativeSignIns(request)
        case ("POST", 2, "keys") where path[1] == "rotate": return try rotateKeys()
        case ("DELETE", 2, "keys"): return try removeKey(path[1])
        case ("POST", 1, "notifications"): return try sendNotification(request)
        case ("POST", 1, "transfers"): return try transferClients(request)
        case ("POST", 2, "transfers") where path[1] == "age": return try ageTransfers(request)
        case ("POST", 3, "users") where path[2] == "migration": return try setMigrationFailure(path[1], request)
        case ("POST", 1, "behaviour"): return try setBehaviour(request)
        default: throw AdminError(404, "not_found", "no admin call \(method) \(request.path)")
        }
    }

    func decodeAdmin<Body: Decodable>(_ type: Body.Type, _ request: Request) throws -> Body {
        do {
            return try JSONDecoder().decode(type, from: Data(request.body.isEmpty ? Array("{}".utf8) : request.body))
        } catch {
            throw AdminError(400, "invalid_request", "the body does not match \(type): \(error)")
        }
    }

    private func user(_ id: String) throws -> TestUser {
        guard let user = store.read({ $0.users[id] }) else { throw AdminError(404, "not_found", "no user \(id)") }
        return user
    }

    private struct NewUser: Decodable {
        var email: String?
        var firstName: String?
        var lastName: String?
        var emailVerified: Bool?
    }

    /// `POST /admin/users` {email?, firstName?, lastName?, emailVerified?}
    private func createUser(_ request: Request) throws -> Response {
        let body = try decodeAdmin(NewUser.self, request)
        let user = try createUser(
            email: body.email, firstName: body.firstName ?? "Test", lastName: body.lastName ?? "User",
            emailVerified: body.emailVerified ?? true)
        return adminJSON(201, userJSON(user))
    }

    private func userJSON(_ user: TestUser) -> String {
        let clients = store.read { state in
            configuration.clients.compactMap { client -> String? in
                let pair = Pair.key(user.id, client.id)
                let authorization = state.authorizations[pair]
                let refreshTokens = state.refreshTokens.values.filter { $0.userID == user.id && $0.clientID == client.id }.count
                guard authorization != nil || state.relayAddresses[pair] != nil || refreshTokens > 0 else { return nil }
                return JSONText.object([
                    ("clientId", .string(client.id)), ("authorized", .bool(authorization != nil)),
                    ("hideEmail", authorization.map { .bool($0.hideEmail) }),
                    ("relayAddress", state.relayAddresses[pair].map { .string($0) }),
                    ("refreshTokens", .integer(Int64(refreshTokens))),
                ])
            }
        }
        return JSONText.object([
            ("id", .string(user.id)), ("sub", .string(user.sub)), ("email", .string(user.email)),
            ("firstName", .string(user.firstName)), ("lastName", .string(user.lastName)),
            ("emailVerified", .bool(user.emailVerified)), ("relayForwarding", .bool(user.relayForwarding)),
            ("clients", .raw("[" + clients.joined(separator: ",") + "]")),
        ])
    }

    /// `GET /admin/users/{id}`: the user, and per client: consent, relay address, live refresh tokens.
    /// `GET /admin/users`: every test user, sorted by id, as `{"users": [...]}`.
    private func listUsers() -> Response {
        let users = store.read { state in state.users.values.sorted { $0.id < $1.id } }
        return adminJSON(200, #"{"users":["# + users.map(userJSON).joined(separator: ",") + "]}")
    }

    private func showUser(_ id: String) throws -> Response {
        adminJSON(200, userJSON(try user(id)))
    }

    /// `DELETE /admin/users/{id}`: the person deletes their Apple Account.
    private func deleteUser(_ id: String) throws -> Response {
        _ = try user(id)
        try store.update { $0.deleteUser(id) }
        return Response(status: 204, contentType: "application/json")
    }

    private struct ClientChoice: Decodable {
        var clientId: String
    }

    /// `POST /admin/users/{id}/revoke` {clientId}: the person stops using Sign in with Apple with the app.
    private func revokeConsent(_ id: String, _ request: Request) throws -> Response {
        let body = try decodeAdmin(ClientChoice.self, request)
        _ = try user(id)
        try store.update { $0.revokeAuthorization(user: id, client: body.clientId) }
        return adminJSON(200, userJSON(try user(id)))
    }

    private struct RelaySetting: Decodable {
        var enabled: Bool
    }

    /// `POST /admin/users/{id}/relay` {enabled}: turns mail forwarding of the relay addresses off or on.
    private func setRelayForwarding(_ id: String, _ request: Request) throws -> Response {
        let body = try decodeAdmin(RelaySetting.self, request)
        _ = try user(id)
        try store.update { $0.users[id]?.relayForwarding = body.enabled }
        return adminJSON(200, userJSON(try user(id)))
    }

    private struct NativeSignIn: Decodable {
        var userId: String
        var clientId: String
        var nonce: String?
        var scopes: [String]? = nil
        var hideEmail: Bool? = nil
        var realUserStatus: Int? = nil
        var transferSub: String? = nil
        /// Leaves `c_hash` out, as some of Apple's native tokens have none: then only the code's
        /// exchange tells whose code it is.
        var withoutCodeHash: Bool? = nil
    }

    /// `POST /admin/sign-in` {userId, clientId, nonce?, scopes?, hideEmail?, realUserStatus?, withoutCodeHash?,
    /// transferSub?}: what the native SDK hands the app. The raw nonce is hashed into the claim
    /// (SHA-256, lowercase hex) as an app does before passing it to Apple.
    private func nativeSignIn(_ request: Request) throws -> Response {
        let body = try decodeAdmin(NativeSignIn.self, request)
        guard configuration.client(body.clientId) != nil else {
            throw AdminError(400, "invalid_request", "unknown clientId \(body.clientId)")
        }
        if let status = body.realUserStatus, !(0...2).contains(status) {
            throw AdminError(400, "invalid_request", "realUserStatus is 0, 1 or 2")
        }
        return adminJSON(200, try nativeSignInJSON(body))
    }

    /// `POST /admin/sign-ins` {clientId, count}: the first native sign-ins of `count` (1 to 10,000)
    /// new people to `clientId`, each with its code and its own raw nonce, as
    /// `{"signIns": [{identityToken, authorizationCode, user, sub, nonce}]}`: a load test's sign-ins
    /// with codes. The codes last Apple's five minutes.
    private func nativeSignIns(_ request: Request) throws -> Response {
        struct Body: Decodable {
            var clientId: String
            var count: Int
        }
        let body = try decodeAdmin(Body.self, request)
        guard configuration.client(body.clientId) != nil else {
            throw AdminError(400, "invalid_request", "unknown clientId \(body.clientId)")
        }
        guard (1...10_000).contains(body.count) else { throw AdminError(400, "invalid_request", "count is 1 to 10000") }
        var signIns: [String] = []
        for index in 0..<body.count {
            let user = try createUser(email: nil, firstName: "Load", lastName: "Test \(index)", emailVerified: true)
            let nonce = Base64URL.encode(try SecureRandom.bytes(count: 16))
            signIns.append(try nativeSignInJSON(NativeSignIn(userId: user.id, clientId: body.clientId, nonce: nonce), rawNonce: nonce))
        }
        return adminJSON(200, #"{"signIns":["# + signIns.joined(separator: ",") + "]}")
    }

    /// One native sign-in's answer: the identity token, the code, Apple's `user` JSON (first
    /// authorization only) and the `sub`; and `nonce` when given.
    private func nativeSignInJSON(_ body: NativeSignIn, rawNonce: String? = nil) throws -> String {
        let now = clock()
        let scopes = body.scopes ?? ["name", "email"]
        let hashedNonce = body.nonce.map { SHA256.hex(Array($0.utf8)) }
        let grant = try authorize(
            userID: body.userId, clientID: body.clientId, scopes: scopes, hideEmail: body.hideEmail ?? false,
            redirectURI: nil, nonce: hashedNonce, now: now)
        let claims = try identityClaims(
            user: grant.user, clientID: body.clientId, now: now, lifetime: Self.nativeIdentityTokenLifetime, nonce: hashedNonce,
            authTime: now, codeHash: body.withoutCodeHash == true ? nil : AppleFormats.halfHash(grant.code),
            realUserStatus: body.realUserStatus,
            transferSub: body.transferSub)
        return JSONText.object([
            ("identityToken", .string(try currentKey.sign(claims: claims.json))),
            ("authorizationCode", .string(grant.code)), ("user", grant.userJSON.map { .string($0) }),
            ("sub", .string(claims.subject)), ("nonce", rawNonce.map { .string($0) }),
        ])
    }

    /// `POST /admin/keys/rotate`: a new key signs from now on; the old ones stay in the key set
    /// until removed.
    private func rotateKeys() throws -> Response {
        let key = try SigningKey(keyID: AppleFormats.keyID(), createdAt: clock(), privateKey: RSAPrivateKey(bits: 2048))
        let keyIDs = try store.update { state in
            state.signingKeys.insert(key, at: 0)
            return state.signingKeys.map(\.keyID)
        }
        return adminJSON(
            200,
            JSONText.object([("kid", .string(key.keyID)), ("keys", .raw("[" + keyIDs.map(JSONText.quoted).joined(separator: ",") + "]"))]))
    }

    /// `DELETE /admin/keys/{kid}`: removes a key that no longer signs.
    private func removeKey(_ keyID: String) throws -> Response {
        try store.update { state in
            guard let index = state.signingKeys.firstIndex(where: { $0.keyID == keyID }) else {
                throw AdminError(404, "not_found", "no key \(keyID)")
            }
            guard index > 0 else { throw AdminError(409, "conflict", "\(keyID) is the current signing key; rotate first") }
            state.signingKeys.remove(at: index)
        }
        return Response(status: 204, contentType: "application/json")
    }

    /// `POST /admin/behaviour` `{latencyMs?, failureRate?, hang?}`: how the endpoints siwa calls
    /// behave from now on (members left out go back to their defaults: no latency, no failure, no hang).
    private func setBehaviour(_ request: Request) throws -> Response {
        struct Body: Decodable {
            var latencyMs: Int?
            var failureRate: Double?
            var hang: Bool?
        }
        let body = try decodeAdmin(Body.self, request)
        let latency = body.latencyMs ?? 0
        let rate = body.failureRate ?? 0
        guard (0...60_000).contains(latency), (0...1).contains(rate) else {
            throw AdminError(400, "invalid_request", "latencyMs is 0 to 60000, failureRate 0 to 1")
        }
        behaviour.withLock { $0 = Behaviour(latencyMs: latency, failureRate: rate, hang: body.hang ?? false) }
        return adminJSON(200, #"{"latencyMs":\#(latency),"failureRate":\#(rate),"hang":\#(body.hang ?? false)}"#)
    }

    func adminJSON(_ status: Int, _ body: String) -> Response {
        Response(status: status, headers: [("Cache-Control", "no-store")], body: Array(body.utf8))
    }
}

/// Server-to-server notifications (docs/APPLE-PROTOCOL.md §7): `POST /admin/notifications` signs one and posts
/// `{"payload": "<JWS>"}` to the configured URL.
extension Emulator {
    /// Event types Apple sends; others can be sent too, to test how unknown types are handled.
    static let eventTypes = ["consent-revoked", "account-delete", "account-deleted", "email-disabled", "email-enabled"]

    private struct NotificationOrder: Decodable {
        var type: String
        var userId: String
        /// The app the event is for (`aud`); the first configured client by default.
        var clientId: String?
        /// Sends `events` as a JSON object, as Apple's documentation shows, instead of the JSON
        /// string real notifications carry.
        var eventsAsObject: Bool?
        /// `event_time` in seconds, as the documentation shows, instead of the observed milliseconds.
        var eventTimeInSeconds: Bool?
        /// False returns the payload without sending it.
        var deliver: Bool?
    }

    func sendNotification(_ request: Request) throws -> Response {
        let order: NotificationOrder
        do {
            order = try JSONDecoder().decode(NotificationOrder.self, from: Data(request.body))
        } catch {
            throw AdminError(
                400, "invalid_request", "expected {type, userId, clientId?, eventsAsObject?, eventTimeInSeconds?, deliver?}: \(error)")
        }
        guard !order.type.isEmpty, order.type.utf8.count <= 64 else { throw AdminError(400, "invalid_request", "type: 1 to 64 characters") }
        let clientID = order.clientId ?? configuration.clients[0].id
        guard configuration.client(clientID) != nil else { throw AdminError(400, "invalid_request", "unknown clientId \(clientID)") }
        // A deleted Apple Account is still notified about, by the sub it had.
        let (sub, relay) = store.read { state -> (String, String?) in
            let owner = self.team(of: clientID, in: state)
            return (
                AppleFormats.sub(teamID: owner, userID: order.userId),
                self.relayAddress(of: order.userId, clientID: clientID, team: owner, in: state)
            )
        }
        let now = clock()
        let jti = try AppleFormats.notificationID()
        let eventTime = order.eventTimeInSeconds == true ? now : now * 1000 + Int64.random(in: 0..<1000)
        let isEmailEvent = order.type.hasPrefix("email-")
        let events = JSONText.object([
            ("type", .string(order.type)), ("sub", .string(sub)), ("event_time", .integer(eventTime)),
            ("email", isEmailEvent ? .string(relay ?? "") : nil), ("is_private_email", isEmailEvent ? .string("true") : nil),
        ])
        let claims = JSONText.object([
            ("iss", .string(AppleFormats.issuer)), ("aud", .string(clientID)), ("exp", .integer(now + 86_400)),
            ("iat", .integer(now)), ("jti", .string(jti)),
            ("events", order.eventsAsObject == true ? .raw(events) : .string(events)),
        ])
        let payload = try currentKey.sign(claims: claims)
        var deliveredStatus: Int64?
        var deliveryError: String?
        if order.deliver ?? true {
            guard let url = configuration.notificationURL else {
                throw AdminError(409, "conflict", "no notificationURL is configured; pass deliver: false to get the payload")
            }
            let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 3, timeout: 10, caFile: configuration.caFile))
            let body = JSONText.object([("payload", .string(payload))])
            do {
                let response = try client.send(
                    HTTPRequest(
                        method: "POST", url: url, headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
                deliveredStatus = Int64(response.status)
            } catch {
                deliveryError = "\(error)"
            }
        }
        return Response(
            status: 200, headers: [("Cache-Control", "no-store")],
            body: Array(
                JSONText.object([
                    ("jti", .string(jti)), ("sub", .string(sub)), ("payload", .string(payload)),
                    ("deliveredStatus", deliveredStatus.map { .integer($0) }), ("deliveryError", deliveryError.map { .string($0) }),
                ]).utf8))
    }
}

/// Team transfer's admin calls: moving clients to another team, ageing the transfers, and making
/// `usermigrationinfo` refuse a user.
extension Emulator {
    private struct TransferOrder: Decodable {
        var clientIds: [String]
        var toTeam: String
    }

    /// `POST /admin/transfers` {clientIds, toTeam}: the clients move to `toTeam` now.
    func transferClients(_ request: Request) throws -> Response {
        let order = try decodeAdmin(TransferOrder.self, request)
        guard configuration.teams.contains(where: { $0.teamID == order.toTeam }) else {
            throw AdminError(400, "invalid_request", "unknown team \(order.toTeam)")
        }
        let now = clock()
        let moved = try store.update { state -> [String] in
            for clientID in order.clientIds {
                guard configuration.client(clientID) != nil else {
                    throw AdminError(400, "invalid_request", "unknown clientId \(clientID)")
                }
                let from = self.team(of: clientID, in: state)
                guard from != order.toTeam else { throw AdminError(409, "conflict", "\(clientID) already belongs to \(order.toTeam)") }
                state.transfers.append(AppTransfer(clientID: clientID, fromTeam: from, toTeam: order.toTeam, at: now))
                state.clientTeams[clientID] = order.toTeam
            }
            return order.clientIds
        }
        return adminJSON(
            200, JSONText.object([("moved", .raw("[" + moved.map(JSONText.quoted).joined(separator: ",") + "]")), ("at", .integer(now))]))
    }

    private struct Age: Decodable {
        var days: Int
    }

    /// `POST /admin/transfers/age` {days}: every transfer happened `days` days earlier (so that the
    /// 60 days can pass in a test).
    func ageTransfers(_ request: Request) throws -> Response {
        let age = try decodeAdmin(Age.self, request)
        guard (0...3650).contains(age.days) else { throw AdminError(400, "invalid_request", "days: 0 to 3650") }
        let count = try store.update { state -> Int in
            for index in state.transfers.indices { state.transfers[index].at -= Int64(age.days) * 86_400 }
            return state.transfers.count
        }
        return adminJSON(200, JSONText.object([("transfers", .integer(Int64(count)))]))
    }

    private struct MigrationFailure: Decodable {
        var fail: Bool
    }

    /// `POST /admin/users/{id}/migration` {fail}: `usermigrationinfo` refuses (400) every call
    /// about this user while `fail` is true.
    func setMigrationFailure(_ id: String, _ request: Request) throws -> Response {
        let order = try decodeAdmin(MigrationFailure.self, request)
        try store.update { state in
            guard state.users[id] != nil else { throw AdminError(404, "not_found", "no user \(id)") }
            if order.fail { state.migrationFailures.insert(id) } else { state.migrationFailures.remove(id) }
        }
        return adminJSON(200, JSONText.object([("userId", .string(id)), ("fail", .bool(order.fail))]))
    }
}

/// Identity tokens for a load test, made in process: what `POST /admin/sign-ins` gives over HTTP,
/// without codes or stored users.
extension Emulator {
    /// Identity tokens for load tests of a relying party: `count` new people (not stored, so no
    /// code and no state) signing in to `clientID`, each token with its own raw nonce, signed by the
    /// current key on all cores.
    /// - Returns: (token, raw nonce) pairs.
    ///
    /// With `userIDs`, one token per id (in no particular order), for the person of that id (`sub` and email
    /// derived from it as for any person of the emulator, `<id>@example.com`): the people a
    /// benchmark's seeded database already holds (`scripts/bench seed` names them `seed-<user id>`).
    package func benchmarkTokens(clientID: String, count: Int, userIDs: [String]? = nil) throws -> [(token: String, nonce: String)] {
        guard configuration.client(clientID) != nil else { throw EmulatorConfigurationError("unknown client id \(clientID)") }
        let key = currentKey
        let now = clock()
        let teamID = configuration.teamID
        let count = userIDs?.count ?? count
        let chunks = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let results = Mutex([[(token: String, nonce: String)]](repeating: [], count: chunks))
        let failure = Mutex<(any Error)?>(nil)
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            var made: [(token: String, nonce: String)] = []
            do {
                for index in stride(from: chunk, to: count, by: chunks) {
                    let userID = try userIDs?[index] ?? "bench-" + hexString(SecureRandom.bytes(count: 8))
                    let nonce = Base64URL.encode(try SecureRandom.bytes(count: 16))
                    let claims = IdentityClaims(
                        audience: clientID, subject: AppleFormats.sub(teamID: teamID, userID: userID), issuedAt: now,
                        lifetime: Emulator.nativeIdentityTokenLifetime, nonce: SHA256.hex(Array(nonce.utf8)),
                        email: userIDs == nil ? "bench\(index)@example.com" : userID + "@example.com",
                        emailVerified: true, isPrivateEmail: false, authTime: now)
                    made.append((try key.sign(claims: claims.json), nonce))
                }
            } catch {
                failure.withLock { $0 = error }
            }
            results.withLock { $0[chunk] = made }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { $0.flatMap { $0 } }
    }
}

/// An admin API error: `{"error": code, "message": text}`.
struct AdminError: Error {
    let status: Int
    let code: String
    let message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    var response: Response {
        Response(status: status, body: Array(JSONText.object([("error", .string(code)), ("message", .string(message))]).utf8))
    }
}
