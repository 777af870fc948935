import Foundation
import StrictJSON
import SyncRules
import Testing

/// The sync wire reads and writes the built-in model as records of its declared collections, with
/// the bytes and the errors the server gave before it did: checked against the recorded `/sync`
/// exchanges (`Tests/IntegrationTests/Recorded/sync-exchanges.json`).
@Suite struct SyncWireTests {
    struct Exchange: Codable {
        var device: String
        var request: String
        var status: Int
        var answer: String
    }

    static let exchanges: [Exchange] = {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("IntegrationTests/Recorded/sync-exchanges.json")
        return (try? JSONDecoder().decode([Exchange].self, from: Data(contentsOf: file))) ?? []
    }()

    static let limits = JSONLimits(depth: 16, members: 256, elements: SyncLimits.maximumItems, stringBytes: 16 * 1024, numberBytes: 1024)

    @Test("Every recorded answer, read as records and written again, is the same bytes")
    func answersRoundTrip() throws {
        let answers = Self.exchanges.filter { $0.status == 200 }
        #expect(answers.count >= 14)
        for exchange in answers {
            let body = try SyncWire.builtIn.read(Array(exchange.answer.utf8), limits: .tokens, checked: false)
            let items = try body.records()
            let written = SyncWire.builtIn.write(cursor: try body.cursor(), items: items, more: body.more, resync: body.resync)
            #expect(String(decoding: written, as: UTF8.self) == exchange.answer)
        }
    }

    @Test("Every recorded refusal of a record gets the recorded message; every accepted request reads")
    func requests() throws {
        var refusals = 0
        for exchange in Self.exchanges {
            guard let body = try? SyncWire.builtIn.read(Array(exchange.request.utf8), limits: Self.limits) else { continue }
            let cursorOrLimitProblem = (try? body.cursor()) == nil || (try? body.limit()) == nil
            do {
                _ = try body.records()
                #expect(exchange.status == 200 || cursorOrLimitProblem, "\(exchange.request)")
            } catch {
                refusals += 1
                let recorded = try JSONDecoder().decode([String: String].self, from: Data(exchange.answer.utf8))["message"] ?? ""
                #expect(error.message == recorded, "\(exchange.request)")
            }
        }
        #expect(refusals >= 10)
    }

    @Test("A lesson without status, score or XP: status is required, the counts are 0")
    func builtInDefaults() throws {
        let body = try SyncWire.builtIn.read(
            Array(#"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed"}]}"#.utf8), limits: Self.limits)
        let items = try body.records()
        let written = SyncWire.builtIn.write(cursor: "1", items: items)
        #expect(
            String(decoding: written, as: UTF8.self)
                == #"{"cursor":"1","profile":null,"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed","score":0,"earnedXp":0,"completedAt":null}],"achievements":[]}"#
        )
        let missing = try SyncWire.builtIn.read(Array(#"{"progress":[{"beliefSystemId":"b","lessonId":"l"}]}"#.utf8), limits: Self.limits)
        #expect(throws: SyncWire.Problem("progress[0].status", "is required")) { try missing.records() }
    }

    @Test("Declared collections sit in `collections`, between the built-in lists and the profile")
    func declared() throws {
        let schema = try SyncSchema(
            declaration: Array(
                #"{"collections":{"notes":{"key":["noteId"],"fields":{"noteId":{"type":"id"},"text":{"type":"string","maxLength":10,"merge":"maximum"}}}}}"#
                    .utf8))
        let wire = SyncWire(declared: schema)
        #expect(wire.declaredIndex(of: "notes") == 2)
        #expect(wire.profile == 3)
        let request = #"{"profile":{"totalXp":5},"collections":{"notes":[{"noteId":"n1","text":"hi"}]}}"#
        let items = try wire.read(Array(request.utf8), limits: Self.limits).records()
        #expect(items.map(\.collection) == [3, 2])
        #expect(
            String(decoding: wire.write(cursor: "2", items: items), as: UTF8.self)
                == #"{"cursor":"2","profile":{"totalXp":5,"currentLevel":0,"streakDays":0,"lastActiveDate":null},"progress":[],"achievements":[],"collections":{"notes":[{"noteId":"n1","text":"hi"}]}}"#
        )
        let unknown = #"{"cursor":"3","collections":{"other":[{"x":1}],"notes":[{"noteId":"n2"}]}}"#
        let refused = try wire.read(Array(unknown.utf8), limits: Self.limits)
        #expect(throws: SyncWire.Problem("`collections.other` is not a collection this server declares")) { try refused.records() }
        // An app reads an answer with collections it does not declare (the server declares more).
        let answer = try wire.read(Array(unknown.utf8), limits: Self.limits, checked: false)
        #expect(try answer.records().map(\.record.key) == ["n2"])
    }
}
