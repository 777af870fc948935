import AppleIDEmulator
import FastCGI
import Foundation
import HTTPClient
import JOSE
import StrictJSON
import Testing
import WebForms

/// Team transfer as Apple documents it: the client_credentials grant, both sides of
/// usermigrationinfo, transfer_sub in identity tokens for 60 days, and secrets of the new team.
@Suite struct TeamTransferTests {
    let client = EmulatorHarness.bundleID

    /// A `client_credentials` access token for `client`, its secret signed by `team`'s key.
    func migrationToken(_ harness: EmulatorHarness, team: String = EmulatorHarness.teamID) throws -> String {
        let response = harness.post(
            "/auth/token",
            [
                ("client_id", client), ("client_secret", try secret(harness, team: team)), ("grant_type", "client_credentials"),
                ("scope", "user.migration"),
            ])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json?["token_type"] as? String == "Bearer" && response.json?["expires_in"] as? Int == 3600)
        #expect(response.json?["refresh_token"] == nil && response.json?["id_token"] == nil)
        return try #require(response.json?["access_token"] as? String)
    }

    func secret(_ harness: EmulatorHarness, team: String) throws -> String {
        team == EmulatorHarness.teamID
            ? try harness.secret(for: client)
            : try harness.secret(for: client, key: harness.teamKeyB, keyID: EmulatorHarness.keyIDB, teamID: EmulatorHarness.teamB)
    }

    func migrationInfo(_ harness: EmulatorHarness, token: String, team: String, _ fields: [(String, String)]) throws -> Response {
        let all = fields + [("client_id", client), ("client_secret", try secret(harness, team: team))]
        let body = all.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }.joined(separator: "&")
        return harness.request(
            "POST", "/auth/usermigrationinfo",
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Bearer " + token)], body: Array(body.utf8))
    }

    func claims(_ token: String) throws -> JSONObject { try CompactJWS(token).decodePayload() }

    @Test(
        "A transfer end to end: the sending team mints transfer_sub (sub, target), the app moves, the receiving team gets the new sub; tokens carry transfer_sub for 60 days"
    )
    func transfer() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        _ = try harness.nativeSignIn(user: user.id)
        let tokenA = try migrationToken(harness)
        #expect(
            harness.post(
                "/auth/token",
                [
                    ("client_id", client), ("client_secret", try secret(harness, team: EmulatorHarness.teamID)),
                    ("grant_type", "client_credentials"), ("scope", "email"),
                ]
            ).appleError == "invalid_scope")
        let minted = try migrationInfo(
            harness, token: tokenA, team: EmulatorHarness.teamID, [("sub", user.sub), ("target", EmulatorHarness.teamB)])
        #expect(minted.status == 200, "\(minted.text)")
        let transferSub = try #require(minted.json?["transfer_sub"] as? String)
        #expect(transferSub != user.sub)
        // Minting again gives the same transfer_sub; an unknown target or sub is refused.
        #expect(
            try migrationInfo(harness, token: tokenA, team: EmulatorHarness.teamID, [("sub", user.sub), ("target", EmulatorHarness.teamB)])
                .json?["transfer_sub"] as? String == transferSub)
        #expect(
            try migrationInfo(harness, token: tokenA, team: EmulatorHarness.teamID, [("sub", user.sub), ("target", "TEAMID9999")])
                .appleError
                == "invalid_request")
        #expect(
            try migrationInfo(
                harness, token: tokenA, team: EmulatorHarness.teamID, [("sub", "000000.nobody.0000"), ("target", EmulatorHarness.teamB)]
            )
            .appleError == "invalid_request")
        #expect(
            try migrationInfo(
                harness, token: "a-made-up-token", team: EmulatorHarness.teamID, [("sub", user.sub), ("target", EmulatorHarness.teamB)]
            )
            .appleError == "invalid_client")

        // The app moves to team B: team A's secrets stop working for it, team B's work.
        try harness.admin("POST", "/admin/transfers", #"{"clientIds":["\#(client)"],"toTeam":"\#(EmulatorHarness.teamB)"}"#)
        #expect(try harness.exchange(try harness.nativeSignIn(user: user.id).code).appleError == "invalid_client")
        let tokenB = try migrationToken(harness, team: EmulatorHarness.teamB)
        #expect(
            try migrationInfo(harness, token: tokenA, team: EmulatorHarness.teamB, [("transfer_sub", transferSub)]).appleError
                == "invalid_client", "the sending team's access token")
        let resolved = try migrationInfo(harness, token: tokenB, team: EmulatorHarness.teamB, [("transfer_sub", transferSub)])
        #expect(resolved.status == 200, "\(resolved.text)")
        let newSub = try #require(resolved.json?["sub"] as? String)
        #expect(newSub != user.sub && resolved.json?["email"] as? String == "jane@example.com")
        #expect(resolved.json?["is_private_email"] as? Bool == false)
        #expect(
            try migrationInfo(harness, token: tokenB, team: EmulatorHarness.teamB, [("transfer_sub", "nope")]).appleError
                == "invalid_request")

        // Tokens now carry the new sub and transfer_sub; 61 days later only the new sub.
        let after = try claims(try harness.nativeSignIn(user: user.id).token)
        #expect(try after.string("sub") == newSub && after.string("transfer_sub") == transferSub)
        try harness.admin("POST", "/admin/transfers/age", #"{"days":61}"#)
        let later = try claims(try harness.nativeSignIn(user: user.id).token)
        #expect(try later.string("sub") == newSub && later.string("transfer_sub") == nil)
        #expect(
            try migrationInfo(harness, token: tokenB, team: EmulatorHarness.teamB, [("transfer_sub", transferSub)]).appleError
                == "invalid_grant", "the exchange ends with the 60 days")
    }

    @Test("A user made to fail is refused (400 invalid_request) on both sides until the failure is cleared")
    func failureInjection() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        _ = try harness.nativeSignIn(user: user.id)
        try harness.admin("POST", "/admin/users/\(user.id)/migration", #"{"fail":true}"#)
        let token = try migrationToken(harness)
        let fields = [("sub", user.sub), ("target", EmulatorHarness.teamB)]
        #expect(try migrationInfo(harness, token: token, team: EmulatorHarness.teamID, fields).appleError == "invalid_request")
        try harness.admin("POST", "/admin/users/\(user.id)/migration", #"{"fail":false}"#)
        #expect(try migrationInfo(harness, token: token, team: EmulatorHarness.teamID, fields).status == 200)
        try harness.admin("POST", "/admin/users/nobody/migration", #"{"fail":true}"#, expect: 404)
        try harness.admin("POST", "/admin/transfers", #"{"clientIds":["\#(client)"],"toTeam":"TEAMID9999"}"#, expect: 400)
    }
}
