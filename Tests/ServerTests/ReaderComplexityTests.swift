import FastCGI
import Foundation
import HTTPClient
import JOSE
import SIWATestSupport
import Server
import StrictJSON
import Testing
import WebForms

/// Every reader of a request body runs in time linear in its input: one request must not be able
/// to hold a worker thread for seconds. Each reader gets each adversarial shape at two sizes, the
/// larger 16 times the smaller: a linear reader costs about 16 times more, one that compares each
/// member with every earlier one 256 times (a 1 MiB body of 131,000 members took 15 s).
///
/// The figures are CPU time of the test's own thread (see `LinearTime`); a case whose large input
/// costs under 2 ms passes whatever its ratio, since a quadratic reader costs seconds there.
@Suite(.serialized) struct ReaderComplexityTests {
    /// 32 KiB and 512 KiB, or the sizes in `SIWA_READER_BYTES` (`scripts/bench readers` runs the
    /// release build at 64 KiB and 1 MiB and prints the figures).
    static let sizes =
        ProcessInfo.processInfo.environment["SIWA_READER_BYTES"].map { $0.split(separator: ",").compactMap { Int($0) } } ?? []
    static let small = sizes.count == 2 ? sizes[0] : 32 * 1024
    static let large = sizes.count == 2 ? sizes[1] : 512 * 1024
    /// Three times the linear ratio of 16: well under the quadratic 256.
    static let allowedRatio = 48.0

    static func expectLinear(_ reader: String, _ growth: LinearTime.Growth, sourceLocation: SourceLocation = #_sourceLocation) {
        print("\(reader): \(growth)")
        #expect(growth.large < 0.002 || growth.ratio < allowedRatio, "\(reader): \(growth)", sourceLocation: sourceLocation)
    }

    /// Each shape at both sizes, with its name.
    static let shapes = zip(AdversarialJSON.shapes(bytes: small), AdversarialJSON.shapes(bytes: large)).map {
        (name: $0.name, small: $0.text, large: $1.text)
    }

    @Test("The strict JSON object reader (tokens, and the first pass of every JSON route) is linear in every shape")
    func jsonObject() {
        for shape in Self.shapes {
            let growth = LinearTime.growth(shape.small, shape.large) { _ = try? JSONObject(parsing: $0) }
            Self.expectLinear("JSONObject, \(shape.name)", growth)
        }
    }

    @Test("The pull reader is linear in every shape, reading each name and each number as an integer")
    func jsonReader() {
        for shape in Self.shapes {
            let growth = LinearTime.growth(shape.small, shape.large) { Self.walk($0) }
            Self.expectLinear("JSONReader, \(shape.name)", growth)
        }
    }

    @Test("A sync's body, read with the route's limits, is linear in every shape")
    func syncBody() {
        for shape in Self.shapes {
            let growth = LinearTime.growth(shape.small, shape.large) { _ = try? SyncRoutes.changes(in: Self.post("/sync", $0)) }
            Self.expectLinear("POST /sync, \(shape.name)", growth)
        }
    }

    @Test("A body decoded for an /auth/ route, with the route's limits, is linear in every shape")
    func authBody() {
        struct Refresh: Decodable { var refreshToken: String }
        for shape in Self.shapes {
            let growth = LinearTime.growth(shape.small, shape.large) {
                _ = try? Self.post("/auth/refresh", $0).decodeJSON(Refresh.self, limits: .auth)
            }
            Self.expectLinear("POST /auth/refresh, \(shape.name)", growth)
        }
    }

    @Test("A form body (Apple's callback) is linear: many fields, empty pairs, many escapes, one long field")
    func formBody() {
        let shapes: [(String, (Int) -> String)] = [
            ("many fields (refused past the limit)", { String(repeating: "a=b&", count: $0 / 4) }),
            ("many empty pairs", { String(repeating: "&", count: $0 - 3) + "a=b" }),
            ("percent escapes", { "code=" + String(repeating: "%C3%A9", count: $0 / 6) }),
            ("one long field", { "state=" + String(repeating: "s", count: $0) }),
        ]
        for (name, make) in shapes {
            let growth = LinearTime.growth(make(Self.small), make(Self.large)) { _ = FormEncoding.fields($0) }
            Self.expectLinear("form, \(name)", growth)
        }
    }

    /// Reads every value of `text` as the sync reader would: names as strings, numbers as
    /// integers, containers entered.
    static func walk(_ text: [UInt8]) {
        var reader = JSONReader(text)
        func value() throws(JSONError) {
            switch try reader.kind() {
            case .object:
                try reader.beginObject()
                while try reader.nextMember() != nil { try value() }
            case .array:
                try reader.beginArray()
                while try reader.nextElement() { try value() }
            case .number: _ = try reader.integer()
            case .string: _ = try reader.string()
            default: try reader.skipValue()
            }
        }
        _ = try? value()
        _ = try? reader.end()
    }

    static func post(_ path: String, _ body: [UInt8]) -> Request {
        Request(
            method: "POST", path: path, query: "", headers: HTTPHeaders([("content-type", "application/json")]),
            remoteAddress: "127.0.0.1", body: body)
    }
}
