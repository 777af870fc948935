import Foundation
import SIWAKit
import SIWATestSupport
import Testing

/// Guest accounts and link tokens from the app's side.
@Suite(.timeLimit(.minutes(1))) struct GuestTests {
    static let guest = #"{"id":"9","createdAt":1800000000,"emails":[],"guest":true}"#

    @Test(
        "A guest signs in with Apple carrying the guest session; the server's 409 identity_in_use keeps the guest signed in; a link token goes in the body, without the guest session"
    )
    func guestUpgrade() async throws {
        let conflict = Locked(true)
        let harness = try ClientHarness { request in
            switch request.path {
            case "/auth/guest":
                return Answers.json(
                    200,
                    #"{"accessToken":"guest-access","tokenType":"Bearer","expiresIn":900,"refreshToken":"guest-refresh","sessionId":"3","user":\#(GuestTests.guest),"isNewUser":true}"#
                )
            default:
                return conflict.value ? Answers.error(409, "identity_in_use") : Answers.signIn(1)
            }
        }
        let user = try await harness.client.continueAsGuest(device: "phone")
        #expect(user.isGuest && user.id == "9")
        #expect(await harness.client.handleCredentialState(.revoked) == .unchanged, "a guest has no Apple credential to check")
        await #expect(throws: SIWAError.self) { try await harness.signIn() }
        let refused = try #require(harness.server.receivedRequests.last)
        #expect(refused.headers["authorization"] == "Bearer guest-access")
        #expect(await harness.client.session.state.user?.isGuest == true, "the refused upgrade keeps the guest")
        conflict.update { $0 = false }
        try await harness.signIn()
        #expect(await harness.client.session.state.user?.isGuest == false)
        // Signed in with Apple now: a later sign-in carries no session; a link token goes in the body.
        let credential = AppleSignInCredential(identityToken: "h.p.s", authorizationCode: nil, user: "001234.abc.0001")
        try await harness.client.signIn(with: credential, nonce: SignInNonce(), linkToken: "link-1")
        let linked = try #require(harness.server.receivedRequests.last)
        #expect(linked.headers["authorization"] == nil && linked.bodyText.contains(#""linkToken":"link-1""#))
    }
}
