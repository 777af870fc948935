package import SyncRules

/// The collections this server's app declared (`SIWA_SYNC_COLLECTIONS`), with the codec of each
/// collection's records.
package final class DeclaredCollections: Sendable {
    package let schema: SyncSchema
    /// A sync's body and answer, with these collections and the built-in ones (their codecs among
    /// them).
    package let wire: SyncWire

    package init(_ schema: SyncSchema) {
        self.schema = schema
        wire = SyncWire(declared: schema)
    }

    /// No declared collections: sync reads and writes only the built-in model.
    package static let none = DeclaredCollections(.empty)

    package var isEmpty: Bool { schema.collections.isEmpty }
}

/// A sync asked for more than a collection's declared limits allow; nothing was written.
package struct SyncLimitExceeded: Error, Sendable, Equatable {
    /// The member of the request at fault, such as `collections.workouts`.
    package let path: String
    package let problem: String

    package init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }
}
