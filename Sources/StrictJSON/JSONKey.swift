/// A member's name quoted once, for a name a writer writes many times (a record's fields): writing
/// it copies its bytes, without looking for characters to escape again.
package struct JSONKey: Sendable, Equatable {
    /// The name as JSON text, quoted and escaped.
    package let quoted: [UInt8]

    package init(_ name: String) {
        quoted = Array(JSONText.quoted(name).utf8)
    }
}
