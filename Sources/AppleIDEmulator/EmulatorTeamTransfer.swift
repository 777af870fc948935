import FastCGI
import Foundation
import JOSE
import StrictJSON

/// Team transfer, as Apple documents it ("Bringing new apps and users into your team"): a client
/// moves from one developer team to another (`POST /admin/transfers`); every user's `sub` is per
/// team, so it changes. Before the move, the sending team mints a `transfer_sub` per user with
/// `POST /auth/usermigrationinfo` (`sub`, `target`); after it, the receiving team exchanges each
/// `transfer_sub` for the new `sub` there, and identity tokens carry `transfer_sub` for 60 days.
/// Both calls need an access token of the `client_credentials` grant (scope `user.migration`).
extension Emulator {
    /// How long after a transfer tokens carry `transfer_sub` and the exchange answers.
    static let transferWindow: Int64 = 60 * 86_400
    /// The lifetime of a `client_credentials` access token.
    static let migrationTokenLifetime: Int64 = 3600

    /// The team that owns `clientID` now.
    func team(of clientID: String, in state: borrowing EmulatorState) -> String {
        state.clientTeams[clientID] ?? configuration.teamID
    }

    /// `user`'s `sub` for `team` (stable per user and team).
    func sub(of user: TestUser, team: String) -> String {
        team == configuration.teamID ? user.sub : AppleFormats.sub(teamID: team, userID: user.id)
    }

    /// The relay address of `user` for `clientID` under `team`: a new one after a transfer.
    func relayAddress(of userID: String, clientID: String, team: String, in state: borrowing EmulatorState) -> String? {
        guard let relay = state.relayAddresses[Pair.key(userID, clientID)] else { return nil }
        return team == configuration.teamID ? relay : AppleFormats.relayAddress(derivedFrom: relay, team: team)
    }

    /// The `transfer_sub` an identity token of `userID` for `clientID` carries at `now`: within
    /// 60 days of the client's latest transfer, for a user who had authorized it before.
    func transferSub(of userID: String, clientID: String, now: Int64, in state: borrowing EmulatorState) -> String? {
        guard let transfer = state.transfers.last(where: { $0.clientID == clientID }), now - transfer.at < Self.transferWindow,
            let authorization = state.authorizations[Pair.key(userID, clientID)], authorization.grantedAt <= transfer.at
        else { return nil }
        return AppleFormats.transferSub(userID: userID, from: transfer.fromTeam, to: transfer.toTeam)
    }

    /// The `client_credentials` grant: an access token for `usermigrationinfo`.
    func migrationAccessToken(clientID: String, now: Int64) throws -> Response {
        let token = try AppleFormats.opaqueToken(kind: "a")
        try store.update { state in
            state.migrationTokens = state.migrationTokens.filter { $0.value.expiresAt > now }
            state.migrationTokens[token] = MigrationToken(
                clientID: clientID, teamID: self.team(of: clientID, in: state), expiresAt: now + Self.migrationTokenLifetime)
        }
        return Response.apple(
            status: 200,
            body: JSONText.object([
                ("access_token", .string(token)), ("token_type", .string("Bearer")), ("expires_in", .integer(Self.migrationTokenLifetime)),
            ]))
    }

    /// `POST /auth/usermigrationinfo`: with `sub` and `target`, the sending team mints the user's
    /// `transfer_sub`; with `transfer_sub`, the receiving team gets the user's new `sub` and email.
    func userMigrationInfo(_ request: Request) throws -> Response {
        let form = try FormFields(body: request)
        let now = clock()
        let clientID = try authenticatedClient(form, now: now)
        let bearer = request.bearerToken ?? ""
        let body = try store.read { state -> String in
            let team = self.team(of: clientID, in: state)
            guard let token = state.migrationTokens[bearer], token.clientID == clientID, token.teamID == team, token.expiresAt > now
            else { throw AppleError(.invalidClient, "The access token is missing, expired, or not this client's.") }
            if let sub = form["sub"] {
                let target = try form.required("target")
                guard target != team, configuration.teams.contains(where: { $0.teamID == target }) else {
                    throw AppleError(.invalidRequest, "Unknown target team.")
                }
                guard let user = state.users.values.first(where: { self.sub(of: $0, team: team) == sub }),
                    !state.migrationFailures.contains(user.id)
                else { throw AppleError(.invalidRequest) }
                return JSONText.object([("transfer_sub", .string(AppleFormats.transferSub(userID: user.id, from: team, to: target)))])
            }
            let presented = try form.required("transfer_sub")
            for transfer in state.transfers.reversed() where transfer.toTeam == team {
                guard
                    let user = state.users.values.first(where: {
                        AppleFormats.transferSub(userID: $0.id, from: transfer.fromTeam, to: team) == presented
                    })
                else { continue }
                guard now - transfer.at < Self.transferWindow else { throw AppleError(.invalidGrant, "The transfer period has ended.") }
                guard !state.migrationFailures.contains(user.id) else { throw AppleError(.invalidRequest) }
                let hidden = state.authorizations[Pair.key(user.id, clientID)]?.hideEmail ?? false
                let relay = hidden ? relayAddress(of: user.id, clientID: clientID, team: team, in: state) : nil
                return JSONText.object([
                    ("sub", .string(self.sub(of: user, team: team))), ("email", .string(relay ?? user.email)),
                    ("is_private_email", .bool(relay != nil)),
                ])
            }
            throw AppleError(.invalidRequest)
        }
        return Response.apple(status: 200, body: body)
    }

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
