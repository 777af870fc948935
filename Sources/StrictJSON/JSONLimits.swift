/// How large the parts of a JSON text may be: what a route's document states for its body, and
/// what keeps reading any text a client sends linear in its size.
package struct JSONLimits: Sendable, Equatable {
    /// Objects and arrays inside each other, the outermost counting as 1.
    package var depth: Int
    /// Members of one object.
    package var members: Int
    /// Elements of one array.
    package var elements: Int
    /// Bytes of one string as written between its quotes (an escape counts as written), member
    /// names included.
    package var stringBytes: Int
    /// Bytes of one number as written.
    package var numberBytes: Int

    package init(depth: Int, members: Int = .max, elements: Int = .max, stringBytes: Int = .max, numberBytes: Int = .max) {
        self.depth = depth
        self.members = members
        self.elements = elements
        self.stringBytes = stringBytes
        self.numberBytes = numberBytes
    }

    /// JOSE headers and claims: the depth only, their size being the token's.
    package static let tokens = JSONLimits(depth: 16)
}
