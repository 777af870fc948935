import Accounts
import MariaDB
import SIWATestSupport
import Testing

/// The pages of older guests that `siwa jobs` reads to purge the unused ones (`GuestSweep`).
@Suite final class GuestSweepTests: MigratedSchemaSuite {
    @Test(
        "Guests past the retention are read page by page in the order of their index, each once, ties by id, each with whether it is unused"
    )
    func pagesOfOlderGuests() throws {
        // Five older guests, two of them made in the same millisecond; one still uses the app; one recent guest.
        let ids = (0..<6).map { _ in TestIDs.next() }
        let days = [40, 39, 39, 35, 31, 1]
        _ = try connection.execute("SET @now = UTC_TIMESTAMP(3)")
        for (id, age) in zip(ids, days) {
            _ = try connection.execute("INSERT INTO users (id, guest_since) VALUES (?, @now - INTERVAL ? DAY)", id, age)
        }
        let active = ids[3]
        _ = try connection.execute(
            "INSERT INTO sessions (id, user_id, expires_at, last_used_at) VALUES (?, ?, UTC_TIMESTAMP(3) + INTERVAL 1 DAY, UTC_TIMESTAMP(3))",
            TestIDs.next(), active)

        var position = Guests.Position.start
        var read: [Guests.Candidate] = []
        var pages = 0
        while true {
            let page = try Guests.past(retentionDays: 30, after: position, limit: 2, on: connection)
            pages += 1
            read += page
            guard page.count == 2 else { break }
            position = page[1].position
        }
        #expect(read.map(\.userID) == Array(ids.prefix(5)), "\(read)")
        #expect(read.map(\.unused) == [true, true, true, false, true])
        #expect(pages == 3)
    }
}
