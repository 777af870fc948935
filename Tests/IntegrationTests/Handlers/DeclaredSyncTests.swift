import FastCGI
import Foundation
import Identity
import MariaDB
import SIWAFixtures
import StrictJSON
import Testing

/// `POST /sync` with the collections of `examples/sync/collections.json` declared: merges by each
/// rule across devices, deletions against edits, pages, limits, and tombstones purged.
@Suite(.serialized)
struct DeclaredSyncTests {
    static let declaration = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("examples/sync/collections.json").path

    /// A harness whose app declares the example's collections, and a user's two signed-in devices.
    static func devices() throws -> (HandlerHarness, phone: String, tablet: String) {
        let harness = try HandlerHarness(environment: ["SIWA_SYNC_COLLECTIONS": declaration])
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let phone = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        let tablet = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        return (harness, phone, tablet)
    }

    static func sync(_ harness: HandlerHarness, _ access: String, _ body: String) -> Response {
        harness.send("POST", "/sync", json: body, headers: harness.bearer(access))
    }

    /// The records of `collection` in an answer, as canonical JSON text by key.
    static func records(_ answer: Response, _ collection: String) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as! [String: Any]
        let records = (object["collections"] as! [String: Any])[collection] as! [[String: Any]]
        var byKey: [String: String] = [:]
        for record in records {
            let key = (record["workoutId"] ?? record["itemId"]) as! String
            #expect(byKey[key] == nil, "\(key) twice in one answer")
            byKey[key] = String(decoding: try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]), as: UTF8.self)
        }
        return byKey
    }

    /// Everything the user has, by a full sync.
    static func state(_ harness: HandlerHarness, _ access: String) throws -> [String: String] {
        try records(sync(harness, access, #"{"cursor":null}"#), "workouts")
    }

    @Test(
        "A collection without key fields (one record per user) is sent whole: empty in an answer from nothing, then only when it changed since the cursor"
    )
    func oneRecordPerUser() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-settings-\(UUID().uuidString).json")
        try Data(
            #"{"collections":{"settings":{"key":[],"fields":{"theme":{"type":"string","maxLength":20,"merge":"latestWins"},"volume":{"type":"integer","min":0,"max":10,"merge":"maximum"}}}}}"#
                .utf8
        ).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let harness = try HandlerHarness(environment: ["SIWA_SYNC_COLLECTIONS": file.path])
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let phone = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        let tablet = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        func settings(_ answer: Response) throws -> [[String: Any]] {
            let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as! [String: Any]
            return (object["collections"] as! [String: Any])["settings"] as! [[String: Any]]
        }
        func cursor(_ answer: Response) throws -> String { try #require(try answer.json().string("cursor")) }
        let empty = Self.sync(harness, phone, #"{"cursor":null}"#)
        #expect(empty.text.contains(#""settings":[{"theme":null,"volume":null}]"#), "\(empty.text)")
        let set = Self.sync(harness, phone, #"{"cursor":"\#(try cursor(empty))","collections":{"settings":[{"volume":5}]}}"#)
        #expect(try settings(set).first?["volume"] as? Int == 5 && set.text.contains(#""cursor":"1~"#), "\(set.text)")
        let quiet = Self.sync(harness, phone, #"{"cursor":"\#(try cursor(set))"}"#)
        #expect(try settings(quiet).isEmpty, "nothing changed since the cursor: \(quiet.text)")
        let behind = Self.sync(harness, tablet, #"{"cursor":"\#(try cursor(empty))","limit":1}"#)
        #expect(try settings(behind).first?["volume"] as? Int == 5, "a device behind gets it: \(behind.text)")
        let again = Self.sync(harness, tablet, #"{"cursor":"\#(try cursor(behind))","collections":{"settings":[{"volume":3}]}}"#)
        #expect(try settings(again).isEmpty && again.text.contains(#""cursor":"1~"#), "a lower volume changes nothing: \(again.text)")
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records WHERE collection = 'settings'") == 1)
    }

    @Test("Two devices' offline changes merge by each field's rule; a delete and an edit converge by the later change, on every device")
    func merges() throws {
        let (harness, phone, tablet) = try Self.devices()
        let first = Self.sync(
            harness, phone,
            #"""
            {"cursor":null,"collections":{"workouts":[
              {"workoutId":"w1","note":{"value":"easy run","at":1000,"device":"phone"},"distance":5000,"laps":{"phone":3},
               "startedAt":1700000000000,"effort":"started","tags":["run"],"deleted":{"value":false,"at":1000,"device":"phone"}},
              {"workoutId":"w2","distance":100,"deleted":{"value":false,"at":1000,"device":"phone"}}],
             "favourites":[{"itemId":"trail-7","addedAt":1700000000000}]}}
            """#)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.text.contains(#""collections":{"workouts":["#) && first.text.contains(#""favourites":[{"itemId":"trail-7""#))
        let cursor = try #require(try first.json().string("cursor"))
        // The tablet, offline meanwhile: another note later, a shorter distance, its own laps, an
        // earlier start, a tag; and it deletes w2 at 2000.
        let second = Self.sync(
            harness, tablet,
            #"""
            {"cursor":null,"collections":{"workouts":[
              {"workoutId":"w1","note":{"value":"tempo","at":2000,"device":"tablet"},"distance":4000,"laps":{"tablet":2},
               "startedAt":1699999999000,"effort":"planned","tags":["tempo"],"shared":true},
              {"workoutId":"w2","deleted":{"value":true,"at":2000,"device":"tablet"}}]}}
            """#)
        #expect(second.status == 200, "\(second.text)")
        let merged = try Self.records(second, "workouts")
        #expect(
            merged["w1"]
                == #"{"deleted":{"at":1000,"device":"phone","value":false},"distance":5000,"effort":"started","laps":{"phone":3,"tablet":2},"note":{"at":2000,"device":"tablet","value":"tempo"},"shared":true,"startedAt":1699999999000,"tags":["run","tempo"],"workoutId":"w1"}"#
        )
        #expect(merged["w2"]?.contains(#""deleted":{"at":2000,"device":"tablet","value":true}"#) == true)
        // The phone edits w2 at 1500, before the tablet's delete: it stays deleted; and gets what the
        // tablet did since its cursor.
        let phoneAgain = Self.sync(
            harness, phone,
            #"{"cursor":"\#(cursor)","collections":{"workouts":[{"workoutId":"w2","distance":300,"deleted":{"value":false,"at":1500,"device":"phone"}}]}}"#
        )
        #expect(try Self.records(phoneAgain, "workouts")["w2"]?.contains(#""value":true"#) == true)
        #expect(try Self.records(phoneAgain, "workouts")["w2"]?.contains(#""distance":300"#) == true)
        // An edit after the delete (3000) brings it back, on every device.
        let revived = Self.sync(
            harness, tablet, #"{"collections":{"workouts":[{"workoutId":"w2","deleted":{"value":false,"at":3000,"device":"phone"}}]}}"#)
        #expect(revived.status == 200)
        let phoneState = try Self.state(harness, phone)
        #expect(phoneState == (try Self.state(harness, tablet)))
        #expect(phoneState["w2"]?.contains(#""deleted":{"at":3000,"device":"phone","value":false}"#) == true)
        // Sent again in any order, nothing moves.
        for body in [first, second].map({ _ in #"{"collections":{"workouts":[{"workoutId":"w1","distance":1,"laps":{"phone":1}}]}}"# }) {
            #expect(Self.sync(harness, phone, body).status == 200)
        }
        #expect(try Self.state(harness, phone) == phoneState)
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records") == 3)
    }

    @Test(
        "A first sync of 2,000 records comes in pages of at most 500, every record once, and one already sent that changed meanwhile again")
    func paging() throws {
        let (harness, phone, tablet) = try Self.devices()
        for chunk in stride(from: 0, to: 2_000, by: 500) {
            let records = (chunk..<chunk + 500).map { #"{"workoutId":"w\#($0)","distance":\#($0)}"# }.joined(separator: ",")
            #expect(Self.sync(harness, phone, #"{"collections":{"workouts":[\#(records)]}}"#).status == 200)
        }
        var seen: [String: Int] = [:]
        var cursor = "null"
        var pages = 0
        while true {
            let page = Self.sync(harness, tablet, #"{"cursor":\#(cursor),"limit":500}"#)
            #expect(page.status == 200, "\(page.text)")
            let records = try Self.records(page, "workouts")
            #expect(records.count <= 500)
            for key in records.keys { seen[key, default: 0] += 1 }
            pages += 1
            if pages == 2 {
                // A record already sent, and one not sent yet, change between pages.
                #expect(
                    Self.sync(
                        harness, phone,
                        #"{"collections":{"workouts":[{"workoutId":"w0","distance":99999},{"workoutId":"w1999","distance":99999}]}}"#
                    ).status == 200)
            }
            guard (try? page.json().bool("more")) == true else { break }
            cursor = "\"" + (try #require(try page.json().string("cursor"))) + "\""
            #expect(pages < 10)
        }
        #expect(seen.count == 2_000 && pages == 5)
        // w0 was sent before it changed: it comes again, at the end; w1999 had not been: it comes once.
        #expect(seen.filter { $0.value > 1 }.keys.sorted() == ["w0"])
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records") == 2_000)
        let bad = Self.sync(harness, tablet, #"{"cursor":"5.0.2.6g","limit":500}"#)
        #expect(bad.status == 400 && bad.text.contains("`cursor` is not a cursor this server gave"))
        #expect(Self.sync(harness, tablet, #"{"limit":0}"#).text.contains("`limit` must be an integer from 1 to 1000"))
    }

    @Test("A request past a declared limit, or with a record that breaks its declaration, gets 400 naming the path, and nothing is written")
    func limits() throws {
        let (harness, phone, _) = try Self.devices()
        let tooMany = (0..<101).map { #"{"itemId":"f\#($0)"}"# }.joined(separator: ",")
        let cases = [
            (#"{"collections":{"favourites":[\#(tooMany)]}}"#, "`collections.favourites` has more than 100 items"),
            (
                #"{"collections":{"workouts":[{"workoutId":"w1","distance":-1}]}}"#,
                "`collections.workouts[0].distance` must be an integer from 0 to 1000000"
            ),
            (
                #"{"collections":{"workouts":[{"workoutId":"w1"},{"workoutId":"w2","effort":"sprint"}]}}"#,
                "`collections.workouts[1].effort` must be planned, started or done"
            ),
            (#"{"collections":{"lessons":[]}}"#, "`collections.lessons` is not a collection this server declares"),
            (#"{"collections":[]}"#, "`collections` must be an object of each collection's records"),
            (
                #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed"}],"collections":{"workouts":[{"note":"x"}]}}"#,
                "`collections.workouts[0].workoutId` is required"
            ),
        ]
        for (body, message) in cases {
            let answer = Self.sync(harness, phone, body)
            #expect(answer.status == 400 && (try? answer.json().string("message")) == message, "\(answer.text)")
        }
        // Records per user: 1,000 favourites fit, the 1,001st is refused.
        for chunk in stride(from: 0, to: 1_000, by: 100) {
            let records = (chunk..<chunk + 100).map { #"{"itemId":"f\#($0)"}"# }.joined(separator: ",")
            #expect(Self.sync(harness, phone, #"{"collections":{"favourites":[\#(records)]}}"#).status == 200)
        }
        let over = Self.sync(harness, phone, #"{"collections":{"favourites":[{"itemId":"f1"},{"itemId":"f-new"}]}}"#)
        #expect(over.status == 400 && over.text.contains("`collections.favourites` would hold more than 1000 records for this user"))
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records WHERE collection = 'favourites'") == 1_000)
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records WHERE collection = 'progress'") == 0)
    }

    @Test("Tombstones past their days are purged by the jobs; a device whose cursor is older is told to resync and gets the whole state")
    func purge() throws {
        let (harness, phone, tablet) = try Self.devices()
        let deleted = #"{"value":true,"at":2000,"device":"phone"}"#
        _ = Self.sync(
            harness, phone, #"{"collections":{"workouts":[{"workoutId":"keep","distance":1},{"workoutId":"gone","distance":2}]}}"#)
        let tabletCursor = try #require(try Self.sync(harness, tablet, #"{"cursor":null}"#).json().string("cursor"))
        _ = Self.sync(harness, phone, #"{"collections":{"workouts":[{"workoutId":"gone","deleted":\#(deleted)}]}}"#)
        let phoneCursor = try #require(try Self.sync(harness, phone, #"{"cursor":null}"#).json().string("cursor"))
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records WHERE deleted = 1") == 1)
        let jobs = try #require(try harness.jobs())
        #expect(try jobs.runOnce().tombstonesPurged == 0, "not yet 30 days old")
        _ = try harness.connection.execute("UPDATE sync_records SET deleted_at = deleted_at - INTERVAL 31 DAY WHERE deleted = 1")
        #expect(try jobs.runOnce().tombstonesPurged == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records") == 1)
        // The tablet never saw the deletion: it must start over.
        let stale = Self.sync(harness, tablet, #"{"cursor":"\#(tabletCursor)"}"#)
        #expect(try stale.status == 200 && stale.json().bool("resync") == true)
        #expect(try Self.records(stale, "workouts").keys.sorted() == ["keep"])
        // The phone saw it: no resync.
        let current = Self.sync(harness, phone, #"{"cursor":"\#(phoneCursor)"}"#)
        #expect(current.status == 200 && !current.text.contains("resync"))
        // A first sync paused after its first page, a page that sent a record deleted and purged
        // before the device came back: the rest of that pass is a resync too.
        _ = Self.sync(harness, phone, #"{"collections":{"workouts":[{"workoutId":"later","distance":3}]}}"#)
        let firstPage = Self.sync(harness, tablet, #"{"cursor":null,"limit":1}"#)
        #expect(try Self.records(firstPage, "workouts").keys.sorted() == ["keep"] && firstPage.text.contains(#""more":true"#))
        let paused = try #require(try firstPage.json().string("cursor"))
        _ = Self.sync(
            harness, phone,
            #"{"collections":{"workouts":[{"workoutId":"keep","deleted":\#(deleted.replacingOccurrences(of: "2000", with: "3000"))}]}}"#)
        _ = try harness.connection.execute("UPDATE sync_records SET deleted_at = deleted_at - INTERVAL 31 DAY WHERE deleted = 1")
        #expect(try jobs.runOnce().tombstonesPurged == 1)
        let resumed = Self.sync(harness, tablet, #"{"cursor":"\#(paused)"}"#)
        #expect(try resumed.json().bool("resync") == true && Self.records(resumed, "workouts").keys.sorted() == ["later"])
    }

    @Test("An account export holds the declared collections' records")
    func export() throws {
        let (harness, phone, _) = try Self.devices()
        _ = Self.sync(
            harness, phone, #"{"collections":{"favourites":[{"itemId":"trail-7","label":{"value":"Ridge","at":5,"device":"phone"}}]}}"#)
        let export = harness.send("GET", "/auth/account/export", headers: harness.bearer(phone))
        #expect(export.status == 200)
        #expect(
            export.text.contains(
                #""favourites":[{"itemId":"trail-7","addedAt":null,"label":{"value":"Ridge","at":5,"device":"phone"},"deleted":null}]"#))
    }

    @Test(
        "A cursor the user was never given (another user's page, an altered tag, none) gets the whole state with resync, never a part of it"
    )
    func cursorsBoundToTheirUser() throws {
        let harness = try HandlerHarness(environment: ["SIWA_SYNC_COLLECTIONS": Self.declaration, "SIWA_GUEST_ACCOUNTS": "true"])
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let alice = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        let bob = try #require(try harness.send("POST", "/auth/guest").json().string("accessToken"))
        func workouts(_ prefix: String, _ count: Int) -> String {
            (1...count).map { #"{"workoutId":"\#(prefix)\#($0)","distance":\#($0),"deleted":{"value":false,"at":1500,"device":"phone"}}"# }
                .joined(separator: ",")
        }
        let lessons = (1...5).map { #"{"beliefSystemId":"stoicism","lessonId":"b\#($0)","status":"completed","score":1}"# }
        #expect(Self.sync(harness, alice, #"{"cursor":null,"collections":{"workouts":[\#(workouts("a", 6))]}}"#).status == 200)
        let bobs = Self.sync(
            harness, bob,
            #"{"cursor":null,"progress":[\#(lessons.joined(separator: ","))],"collections":{"workouts":[\#(workouts("b", 5))]}}"#)
        let bobsCursor = try #require(try bobs.json().string("cursor"))
        let page = Self.sync(harness, alice, #"{"cursor":null,"limit":3}"#)
        let alicesCursor = try #require(try page.json().string("cursor"))
        #expect(page.text.contains(#""more":true"#) && alicesCursor.contains("."), "a continuation cursor: \(alicesCursor)")

        let altered = String(bobsCursor.dropLast()) + (bobsCursor.hasSuffix("0") ? "1" : "0")
        let untagged = String(bobsCursor.prefix { $0 != "~" })
        for (cursor, what) in [(alicesCursor, "another user's"), (altered, "an altered tag"), (untagged, "no tag")] {
            let answer = Self.sync(harness, bob, #"{"cursor":"\#(cursor)","limit":1000}"#)
            let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any]
            #expect(answer.status == 200 && object?["resync"] as? Bool == true, "\(what): \(answer.text)")
            #expect(try Self.records(answer, "workouts").count == 5, "\(what): all of Bob's workouts")
            #expect((object?["progress"] as? [Any])?.count == 5, "\(what): all of Bob's lessons")
            #expect(try answer.json().string("cursor") == bobsCursor, "\(what): the answer's cursor is Bob's own")
        }
        // Bob's own cursor: nothing new, no resync.
        let own = Self.sync(harness, bob, #"{"cursor":"\#(bobsCursor)"}"#)
        #expect(own.status == 200 && !own.text.contains("resync") && !own.text.contains("b1"), "\(own.text)")
    }

    /// `count` workouts as large as the example declaration lets them be: a 500-byte note, 20 tags
    /// of 32 bytes, and a `laps` counter of 64 devices with 128-byte ids (about 10 KB each).
    static func largeWorkouts(_ prefix: String, _ count: Int) -> String {
        let note = String(repeating: "n", count: 500)
        let tags = (0..<20).map { "\"\(String(repeating: "t", count: 30))\($0 / 10)\($0 % 10)\"" }.joined(separator: ",")
        let laps = (0..<64).map { "\"\(String(repeating: "d", count: 126))\($0 / 10)\($0 % 10)\":1" }.joined(separator: ",")
        return (0..<count).map {
            #"{"workoutId":"\#(prefix)\#($0)","note":{"value":"\#(note)","at":1,"device":"d"},"tags":[\#(tags)],"laps":{\#(laps)}}"#
        }.joined(separator: ",")
    }

    @Test("A guest filling its account with the largest records stops at the guest's bytes, refused naming the limit with nothing written")
    func guestBytes() throws {
        let harness = try HandlerHarness(environment: ["SIWA_SYNC_COLLECTIONS": Self.declaration, "SIWA_GUEST_ACCOUNTS": "true"])
        let guest = try #require(try harness.send("POST", "/auth/guest").json().string("accessToken"))
        var refused: Response?
        for request in 0..<40 {
            let workouts = Self.largeWorkouts("r\(request)-", 28)
            let answer = Self.sync(harness, guest, #"{"collections":{"workouts":[\#(workouts)]}}"#)
            guard answer.status == 200 else {
                refused = answer
                break
            }
        }
        let answer = try #require(refused, "40 requests of 28 large workouts (about 11 MB) were all accepted")
        #expect(answer.status == 400 && answer.text.contains("more than the 4194304 a guest may"), "\(answer.text)")
        let stored = try harness.count("SELECT CAST(COALESCE(SUM(LENGTH(body)), 0) AS SIGNED) FROM sync_records")
        let records = try harness.count("SELECT COUNT(*) FROM sync_records")
        #expect(stored <= 4_194_304 && stored > 3_000_000, "\(stored) bytes stored")
        #expect(records % 28 == 0, "the refused request wrote none of its 28 records (\(records) stored)")
        // Reading it all back: pages of at most about 1 MiB of records.
        var cursor = "null"
        var seen = 0
        for _ in 0..<20 {
            let page = Self.sync(harness, guest, #"{"cursor":\#(cursor),"limit":1000}"#)
            let records = try Self.records(page, "workouts")
            #expect(records.values.reduce(0) { $0 + $1.utf8.count } <= 1_048_576 + 12_000, "a page of \(records.count) records")
            seen += records.count
            guard page.text.contains(#""more":true"#) else { break }
            cursor = "\"" + (try #require(try page.json().string("cursor"))) + "\""
        }
        #expect(seen == records, "every record once, in pages")
    }

    @Test("A record, a request and a counter's devices past their declared limits are refused naming the limit, with nothing written")
    func recordAndRequestBytes() throws {
        let declaration = FileManager.default.temporaryDirectory.appendingPathComponent("bytes-\(UUID().uuidString).json").path
        try #"""
        {"limits": {"bytesPerRequest": 2048},
         "collections": {"notes": {"key": ["id"], "fields": {"id": {"type": "id"},
             "text": {"type": "string", "maxLength": 2000, "merge": "latestWins"},
             "reads": {"type": "integer", "min": 0, "max": 100, "merge": "counter"}},
             "limits": {"bytesPerRecord": 600}}}}
        """#.write(toFile: declaration, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: declaration) }
        let harness = try HandlerHarness(environment: ["SIWA_SYNC_COLLECTIONS": declaration])
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let phone = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        func note(_ id: String, _ length: Int) -> String {
            #"{"id":"\#(id)","text":{"value":"\#(String(repeating: "x", count: length))","at":1,"device":"p"}}"#
        }
        let fiveNotes = (1...5).map { note("n\($0)", 500) }.joined(separator: ",")
        let cases = [
            (#"{"collections":{"notes":[\#(note("big", 700))]}}"#, "`collections.notes` would make a record of"),
            (
                #"{"collections":{"notes":[\#(fiveNotes)]}}"#,
                "`collections` would write"
            ),
        ]
        for (body, message) in cases {
            let answer = Self.sync(harness, phone, body)
            #expect(answer.status == 400 && answer.text.contains(message), "\(answer.text)")
        }
        // Two devices' counts may add up past the max; a 65th device may not be counted.
        #expect(Self.sync(harness, phone, #"{"collections":{"notes":[{"id":"c","reads":{"phone":60}}]}}"#).status == 200)
        #expect(Self.sync(harness, phone, #"{"collections":{"notes":[{"id":"c","reads":{"tablet":60}}]}}"#).status == 200)
        let others = (0..<62).map { #""d\#($0)":1"# }.joined(separator: ",")
        #expect(Self.sync(harness, phone, #"{"collections":{"notes":[{"id":"c","reads":{\#(others)}}]}}"#).status == 200)
        let over = Self.sync(harness, phone, #"{"collections":{"notes":[{"id":"c","reads":{"one-more":1}}]}}"#)
        #expect(over.status == 400 && over.text.contains("`collections.notes.reads` would count 65 devices, more than 64"), "\(over.text)")
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records") == 1, "only the counter's record")
        #expect(try harness.count("SELECT COUNT(*) FROM sync_records WHERE body LIKE '%one-more%'") == 0)
    }
}
