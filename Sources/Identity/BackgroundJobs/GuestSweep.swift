import Accounts

/// Where the purge of unused guests stands between the passes of one `siwa jobs`: each pass reads
/// the next `pageSize` guests past the retention days from here, in the order of their index,
/// deletes the unused ones among them (at most a pass's batch), and moves on; after the last
/// guest it starts again from the first. A pass therefore reads a page, not every older guest
/// (most of whom may still use the app), and a sweep of them all takes (older guests / page)
/// passes. A new `siwa jobs` starts from the first guest. Used by the jobs' one thread.
final class GuestSweep {
    /// Guests read per pass: one index entry and one user's sessions each.
    static let pageSize = 10_000

    /// After the last guest the previous pass looked at.
    var position = Guests.Position.start
}
