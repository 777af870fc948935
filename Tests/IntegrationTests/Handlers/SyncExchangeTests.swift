import AccountData
import FastCGI
import Foundation
import Identity
import MariaDB
import SIWAFixtures
import Server
import SiwaConfig
import StrictJSON
import Testing

/// `POST /sync` as apps use it today, byte for byte: exchanges recorded from the server before
/// collections could be declared (`Recorded/sync-exchanges.json`), replayed against today's.
/// A server without declared collections must answer each request exactly as it was recorded,
/// but for the tag each cursor has carried since cursors were bound to their user: a recorded
/// request's cursor is sent with the tag the server gives it for this user, and the tags of the
/// answers' cursors are left out of the comparison.
///
/// The requests are the file's; to record their answers again (only when an answer is meant to
/// change, with a CHANGELOG entry):
/// `SIWA_RECORD_SYNC_EXCHANGES=1 swift test --filter SyncExchangeTests`.
@Suite(.serialized)
struct SyncExchangeTests {
    struct Exchange: Codable, Equatable {
        /// Which of the user's two devices sends it.
        var device: String
        var request: String
        var status: Int
        var answer: String
    }

    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Recorded/sync-exchanges.json")

    /// The answers to `requests` (device and body) of a new user's two devices, in order.
    static func exchange(_ requests: [(device: String, body: String)]) throws -> [Exchange] {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        var access: [String: String] = [:]
        for device in ["phone", "tablet"] {
            access[device] = try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken")
        }
        let binding = SyncCursorBinding(dataKeys: try #require(harness.application.config.sessions).dataKeys)
        let userID = try harness.connection.query("SELECT id FROM users")[0].decode(UInt64.self, at: 0)
        return requests.map { device, body in
            let tagged = body.replacing(/"cursor":"([0-9a-f.]*)"/) { match in
                guard let cursor = SyncCursor(text: String(match.1)) else { return String(match.0) }
                return #""cursor":"\#(match.1)~\#(binding.tag(cursor, userID: userID))""#
            }
            let answer = harness.send("POST", "/sync", json: tagged, headers: harness.bearer(access[device]!))
            return Exchange(
                device: device, request: body, status: answer.status, answer: answer.text.replacing(/~[0-9a-f]{32}"/, with: "\""))
        }
    }

    @Test("Today's recorded POST /sync exchanges, answers and errors, replay byte for byte")
    func replay() throws {
        let recorded = try JSONDecoder().decode([Exchange].self, from: Data(contentsOf: Self.file))
        let exchanges = try Self.exchange(recorded.map { ($0.device, $0.request) })
        if ProcessInfo.processInfo.environment["SIWA_RECORD_SYNC_EXCHANGES"] != nil {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try encoder.encode(exchanges).write(to: Self.file)
        }
        #expect(recorded.count >= 30)
        for (now, then) in zip(exchanges, recorded) {
            #expect(now == then, "\(then.device): \(then.request)")
        }
    }
}
