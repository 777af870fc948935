import FastCGI
import Foundation
import SIWAFixtures
import StrictJSON
import Testing

/// `POST /sync` as apps use it today, byte for byte: exchanges recorded from the server before
/// collections could be declared (`Recorded/sync-exchanges.json`), replayed against today's.
/// A server without declared collections must answer each request exactly as it was recorded.
///
/// To record again (only when an answer is meant to change, with a CHANGELOG entry):
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

    /// What the devices send, in order.
    static let requests: [(device: String, body: String)] = [
        (
            "phone",
            #"{"cursor":null,"profile":{"totalXp":100,"currentLevel":3,"streakDays":4,"lastActiveDate":"2026-11-20"},"progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"in_progress","score":5,"earnedXp":10},{"beliefSystemId":"stoicism","lessonId":"l2","status":"completed","score":7,"earnedXp":20,"completedAt":2000}],"achievements":[{"achievementId":"first-steps","progress":3}]}"#
        ),
        (
            "tablet",
            #"{"cursor":null,"profile":{"totalXp":80,"currentLevel":2,"streakDays":1,"lastActiveDate":"2026-11-21"},"progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"completed","score":3,"earnedXp":12,"completedAt":1500},{"beliefSystemId":"taoism","lessonId":"t1","status":"not_started"}],"achievements":[{"achievementId":"first-steps","progress":5,"completed":true,"completedAt":1800}]}"#
        ),
        ("phone", #"{"cursor":"1"}"#),
        ("phone", #"{"cursor":"2"}"#),
        ("tablet", #"{"cursor":"2","progress":[{"beliefSystemId":"taoism","lessonId":"t1","status":"in_progress","score":2},{"beliefSystemId":"taoism","lessonId":"t1","status":"not_started","score":9,"earnedXp":1}]}"#),
        ("phone", #"{"cursor":"2","progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"in_progress","score":1}]}"#),
        ("phone", #"{"cursor":"3","profile":{"totalXp":100,"currentLevel":3,"streakDays":9,"lastActiveDate":"2026-11-21"}}"#),
        ("tablet", #"{"cursor":"3","achievements":[{"achievementId":"first-steps","progress":1,"completed":false},{"achievementId":"streak.7","progress":2}]}"#),
        ("phone", #"{}"#),
        ("phone", #"{"cursor":null,"profile":null,"progress":null,"achievements":null}"#),
        ("tablet", #"{"cursor":"5","extra":{"a":[1,2]},"progress":[{"beliefSystemId":"b","lessonId":"x","status":"completed","unknown":true,"completedAt":null}]}"#),
        ("phone", #"{"cursor":"0"}"#),
        ("phone", #"{"cursor":"6","profile":{"lastActiveDate":"2026-12-01"}}"#),
        // Refused: 400 naming the member, nothing written.
        ("phone", #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"done"}]}"#),
        ("phone", #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed","score":-1}]}"#),
        ("phone", #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed","score":1.5}]}"#),
        ("phone", #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed","completedAt":4102444800001}]}"#),
        ("phone", #"{"progress":[{"beliefSystemId":"b c","lessonId":"l","status":"completed"}]}"#),
        ("phone", #"{"progress":[{"lessonId":"l","status":"completed"}]}"#),
        ("phone", #"{"progress":{"beliefSystemId":"b"}}"#),
        ("phone", #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed"},7]}"#),
        ("phone", #"{"achievements":[{"achievementId":"a","progress":"3"}]}"#),
        ("phone", #"{"achievements":[{"achievementId":"a","completed":"yes"}]}"#),
        ("phone", #"{"profile":{"lastActiveDate":"2026-02-30"}}"#),
        ("phone", #"{"profile":{"totalXp":1000000000001}}"#),
        ("phone", #"{"profile":[1]}"#),
        ("phone", #"{"cursor":"abc"}"#),
        ("phone", #"{"cursor":5}"#),
        ("phone", #"[1,2]"#),
        ("phone", #"{"cursor":"6""#),
        ("phone", #"{"cursor":"7"}"#),
    ]

    /// The exchanges of `requests` with a new user's two devices.
    static func exchange() throws -> [Exchange] {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        var access: [String: String] = [:]
        for device in ["phone", "tablet"] {
            access[device] = try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken")
        }
        return requests.map { device, body in
            let answer = harness.send("POST", "/sync", json: body, headers: harness.bearer(access[device]!))
            return Exchange(device: device, request: body, status: answer.status, answer: answer.text)
        }
    }

    @Test("Today's recorded POST /sync exchanges, answers and errors, replay byte for byte")
    func replay() throws {
        let exchanges = try Self.exchange()
        if ProcessInfo.processInfo.environment["SIWA_RECORD_SYNC_EXCHANGES"] != nil {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try encoder.encode(exchanges).write(to: Self.file)
        }
        let recorded = try JSONDecoder().decode([Exchange].self, from: Data(contentsOf: Self.file))
        #expect(recorded.count == Self.requests.count)
        for (now, then) in zip(exchanges, recorded) {
            #expect(now == then, "\(then.device): \(then.request)")
        }
    }
}
