/// The member names of one JSON object, for refusing a duplicate in time linear in the object's
/// size.
///
/// A name is compared with every earlier one only while the object has a few; from
/// `directLimit` names on they go into an open-addressing hash table keyed by Swift's `Hasher`
/// (SipHash, seeded at random per process), so a client cannot choose names that all collide.
/// Comparing each name with every earlier one made a 1 MiB body of 131,000 members cost seconds.
///
/// The names themselves stay in the caller's buffer (unescaped UTF-8, back to back); the table
/// holds their ranges. `removeAll()` keeps the storage for the next object at the same depth.
struct JSONNameTable {
    /// Up to this many names are compared directly: the JOSE headers and claims of the hot path
    /// never build a table (an Apple identity token has 12 to 15 claims; with a limit of 8, its
    /// payload hashed every name with SipHash, about a tenth of the Swift work of a verification).
    static let directLimit = 16

    private var ranges: [Range<Int>] = []
    /// Index + 1 into `ranges`, 0 for a free slot; empty until there are more than `directLimit`
    /// names. Its count is a power of two, at least twice the names'.
    private var slots: [Int32] = []

    /// The number of names.
    var count: Int { ranges.count }

    /// Forgets the names, keeping the storage.
    mutating func removeAll() {
        ranges.removeAll(keepingCapacity: true)
        if !slots.isEmpty { slots.removeAll(keepingCapacity: true) }
    }

    /// Adds the name at `name` of `bytes`.
    /// - Returns: false, adding nothing, when an earlier name of the table has the same bytes.
    mutating func insert(_ name: Range<Int>, of bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in insert(name, of: buffer) }
    }

    private mutating func insert(_ name: Range<Int>, of bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if ranges.count < Self.directLimit {
            for other in ranges where Self.equal(other, name, bytes) { return false }
            // Room for the names of a token's claims at once, rather than growing 1, 2, 4, 8, 16.
            if ranges.capacity == 0 { ranges.reserveCapacity(Self.directLimit) }
            ranges.append(name)
            return true
        }
        if slots.isEmpty { rebuild(capacity: Self.directLimit * 4, bytes) }
        let mask = slots.count - 1
        var slot = Self.hash(name, bytes) & mask
        while slots[slot] != 0 {
            if Self.equal(ranges[Int(slots[slot]) - 1], name, bytes) { return false }
            slot = (slot + 1) & mask
        }
        ranges.append(name)
        slots[slot] = Int32(ranges.count)
        if ranges.count * 2 > slots.count { rebuild(capacity: slots.count * 2, bytes) }
        return true
    }

    /// Lays every name into a table of `capacity` slots.
    private mutating func rebuild(capacity: Int, _ bytes: UnsafeBufferPointer<UInt8>) {
        slots = [Int32](repeating: 0, count: capacity)
        let mask = capacity - 1
        for (index, range) in ranges.enumerated() {
            var slot = Self.hash(range, bytes) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(index + 1)
        }
    }

    private static func hash(_ range: Range<Int>, _ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[range])))
        return hasher.finalize()
    }

    private static func equal(_ a: Range<Int>, _ b: Range<Int>, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.isEmpty || memcmpEqual(bytes.baseAddress! + a.lowerBound, bytes.baseAddress! + b.lowerBound, a.count))
    }
}
