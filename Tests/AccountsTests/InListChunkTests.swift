import Accounts
import Testing

/// How a batch's users are listed in `IN (...)` lists.
@Suite struct InListChunkTests {
    @Test(
        "Lists of any length become chunks of at most 64, each a power of two long, padded by repeating the last value",
        arguments: [0, 1, 3, 5, 63, 64, 65, 130])
    func chunks(count: Int) {
        let values = Array(0..<count)
        let chunks = SyncStore.inListChunks(values)
        #expect(chunks.count == (count + 63) / 64)
        for chunk in chunks {
            #expect(chunk.count <= 64 && chunk.count.nonzeroBitCount == 1, "\(chunk.count) values")
        }
        let listed = chunks.flatMap { $0 }
        #expect(Set(listed) == Set(values), "every value, nothing else")
        #expect(Array(listed.prefix(count)) == values, "in order, the padding at the end")
        #expect(listed.dropFirst(count).allSatisfy { $0 == count - 1 }, "the padding repeats the last value")
    }
}
