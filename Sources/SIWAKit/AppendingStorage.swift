public import Foundation

/// A storage that can also add bytes to the end of a value without rewriting it: what lets
/// `SyncClient` record a change with one small write, whatever the size of its state.
///
/// `FileStorage` and `MemoryStorage` are such storages. With any other `KeyValueStorage` (the
/// Keychain, or one of the app's), `SyncClient` stores its whole state at each change instead.
public protocol AppendingStorage: KeyValueStorage {
    /// Adds `data` at the end of the value of `key` (creating the value when there is none), and
    /// makes it durable before returning. A failed append leaves the value as it was, or (after a
    /// crash within it) followed by a part of `data`, never anything else.
    /// - Parameters:
    ///   - data: the bytes to add.
    ///   - key: the value's name.
    /// - Throws: when the bytes cannot be added.
    func append(_ data: Data, to key: String) throws
}
