/// A secret value read from a file. Prints as `<redacted>` so it cannot leak into logs or errors.
package struct Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself; pass it on only to the code that needs it.
    package let value: String

    package init(_ value: String) { self.value = value }

    package var description: String { "<redacted>" }
    package var debugDescription: String { "<redacted>" }
}
