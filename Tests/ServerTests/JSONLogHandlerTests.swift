import Foundation
import Logging
import Server
import Testing

@Suite struct JSONLogHandlerTests {
    @Test("A line is one JSON object: time, level, logger, message, then the metadata, nested values kept and strings escaped")
    func oneObjectPerLine() throws {
        let line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 1_795_449_244.123), level: .info, label: "siwa", message: "request \"quoted\"\nnext",
            metadata: [
                "route": "/auth/apple", "status": "200", "level": "forged", "nested": ["a": ["1", "2"]],
            ])
        #expect(!line.contains(UInt8(ascii: "\n")))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(object["time"] as? String == "2026-11-23T15:54:04.123Z")
        #expect(object["level"] as? String == "info", "metadata cannot replace a fixed member")
        #expect(object["logger"] as? String == "siwa")
        #expect(object["message"] as? String == "request \"quoted\"\nnext")
        #expect(object["route"] as? String == "/auth/apple")
        #expect((object["nested"] as? [String: Any])?["a"] as? [String] == ["1", "2"])
    }
}
