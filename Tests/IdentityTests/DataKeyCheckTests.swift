import Accounts
import Foundation
import Identity
import JOSE
import Testing

@Suite struct DataKeyCheckTests {
    static func keys(_ lines: [(String, [UInt8])]) throws -> DataKeys {
        try DataKeys(text: lines.map { "\($0.0) \(Data($0.1).base64EncodedString())" }.joined(separator: "\n"))
    }

    @Test("The keys that sealed the tokens pass; a withheld key is named as missing, another key under its id as wrong")
    func check() throws {
        let right = try Self.keys([("k1", try SecureRandom.bytes(count: 32))])
        let sealed = try right.seal("apple-refresh-token", clientID: "com.example.app")
        let counts = ["k1": 5]
        #expect(DataKeyCheck.problem(keys: right, source: "the bundle", sealedCounts: counts, samples: [sealed]) == nil)

        let withheld = DataKeyCheck.problem(keys: nil, source: "no key bundle", sealedCounts: counts, samples: [sealed])
        #expect(withheld?.code == .missing)
        #expect(withheld?.description.contains("data key k1 (5 token(s))") == true)

        let other = try Self.keys([("k2", try SecureRandom.bytes(count: 32))])
        let missing = DataKeyCheck.problem(keys: other, source: "the file", sealedCounts: counts, samples: [sealed])
        #expect(missing?.code == .missing && missing?.description.contains("data key k1 (sealing 5") == true)

        let wrong = try Self.keys([("k1", try SecureRandom.bytes(count: 32))])
        let problem = DataKeyCheck.problem(keys: wrong, source: "the file", sealedCounts: counts, samples: [sealed])
        #expect(problem?.code == .wrongKey && problem?.description.contains("does not open") == true)

        #expect(DataKeyCheck.problem(keys: nil, source: "none", sealedCounts: [:], samples: []) == nil, "no token, no key needed")
    }
}
