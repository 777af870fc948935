import Foundation
import Logging
import SIWATestSupport
import SiwaConfig
import Testing

#if canImport(Glibc)
    import Glibc
#endif

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

    @Test("A logged line carries the handler's clock's time and the logger's and event's metadata")
    func loggedLineUsesTheClock() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { close(descriptors[0]) }
        var logger = Logger(label: "siwa.test") { label in
            JSONLogHandler(label: label, descriptor: descriptors[1], clock: ManualClock(1_795_449_244.5))
        }
        logger[metadataKey: "worker"] = "3"
        logger.info("signed in", metadata: ["route": "/auth/apple"])
        close(descriptors[1])
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptors[0], &buffer, buffer.count)
        let bytes = Array(buffer[0..<max(count, 0)])
        #expect(bytes.last == UInt8(ascii: "\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes.dropLast())) as? [String: Any])
        #expect(object["time"] as? String == "2026-11-23T15:54:04.500Z")
        #expect(object["logger"] as? String == "siwa.test")
        #expect(object["message"] as? String == "signed in")
        #expect(object["worker"] as? String == "3")
        #expect(object["route"] as? String == "/auth/apple")
    }
}
