public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the device keeps the session, a name not yet stored by the server, and the sync state:
/// a few small values by key. A write replaces the value whole or not at all.
///
/// `KeychainStorage` on Apple platforms; `FileStorage` and `MemoryStorage` everywhere.
public protocol KeyValueStorage: Sendable {
    /// The value stored for `key`.
    /// - Parameter key: the value's name.
    /// - Returns: the value, or nil when none is stored for `key`.
    /// - Throws: when the value cannot be read (`SIWAError.storage` for the storages of `SIWAKit`).
    func read(_ key: String) throws -> Data?
    /// Stores `data` for `key`, replacing the value stored for it whole.
    /// - Parameters:
    ///   - data: the value.
    ///   - key: the value's name.
    /// - Throws: when the value cannot be stored; the old value, if any, is then kept.
    func write(_ data: Data, for key: String) throws
    /// Removes the value of `key`; nothing happens when none is stored.
    /// - Parameter key: the value's name.
    /// - Throws: when the value cannot be removed.
    func delete(_ key: String) throws
}

// `@unchecked Sendable`: `values` is only touched with `lock` held.
/// Values in memory only: gone when the process ends (tests, previews).
public final class MemoryStorage: KeyValueStorage, AppendingStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Data] = [:]

    /// An empty storage.
    public init() {}

    /// The value stored for `key`. Never throws.
    /// - Parameter key: the value's name.
    /// - Returns: the value, or nil when none is stored for `key`.
    public func read(_ key: String) throws -> Data? {
        locked { values[key] }
    }

    /// Stores `data` for `key`, replacing the value stored for it. Never throws.
    /// - Parameters:
    ///   - data: the value.
    ///   - key: the value's name.
    public func write(_ data: Data, for key: String) throws {
        locked { values[key] = data }
    }

    /// Removes the value of `key`, if any. Never throws.
    /// - Parameter key: the value's name.
    public func delete(_ key: String) throws {
        locked { values[key] = nil }
    }

    /// Adds `data` at the end of the value of `key` (an empty one when none is stored). Never throws.
    /// - Parameters:
    ///   - data: the bytes to add.
    ///   - key: the value's name.
    public func append(_ data: Data, to key: String) throws {
        locked { values[key, default: Data()].append(data) }
    }

    // `NSLocking.withLock` needs iOS 16 and macOS 13 on Apple platforms.
    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

/// One file per key in a directory of the app's (created with mode 0700), each file mode 0600.
/// A write goes to a new file that is synced and then renamed over the old one, so a crash
/// leaves the old value or the new one, never a mix. An append adds to the file in place and
/// syncs it.
public struct FileStorage: KeyValueStorage, AppendingStorage {
    /// The directory of the files. The first write creates it (and its parents) if it does not exist.
    public let directory: URL

    /// A storage of files in `directory`, which need not exist yet.
    /// - Parameter directory: a directory of the app's own, such as one in Application Support.
    public init(directory: URL) {
        self.directory = directory
    }

    /// The contents of the file of `key`.
    /// - Parameter key: the value's name, which is also the file's: 1 to 128 characters of
    ///   `[A-Za-z0-9._-]`, not starting with a dot.
    /// - Returns: the value, or nil when the file does not exist.
    /// - Throws: `SIWAError.storage` when `key` is not such a name or the file cannot be read.
    public func read(_ key: String) throws -> Data? {
        let path = try self.path(key)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw SIWAError.storage("cannot read \(path): \(error)")
        }
    }

    /// Writes `data` to the file of `key`: to a new file (mode 0600), synced, then renamed over the
    /// old one, so that a crash leaves the old value or the new one.
    /// - Parameters:
    ///   - data: the value.
    ///   - key: the value's name, as in `read(_:)`.
    /// - Throws: `SIWAError.storage` when `key` is not such a name or the file cannot be written (the
    ///   old value is kept); `FileManager`'s error when `directory` cannot be created.
    public func write(_ data: Data, for key: String) throws {
        let path = try self.path(key)
        try FileManager.default.createDirectory(
            atPath: directory.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".\(UInt32.random(in: .min ... .max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SIWAError.storage("cannot create \(temporary): errno \(errno)") }
        let written = writeFully(descriptor, data)
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written, synced, rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw SIWAError.storage("cannot write \(path): errno \(failure)")
        }
        syncDirectory()
    }

    /// Adds `data` at the end of the file of `key` (created, mode 0600, when it does not exist) and
    /// syncs it. When the write fails, the file is cut back to its old length; a crash within it
    /// may leave a part of `data` at the end, which the reader of the value must recognise.
    /// - Parameters:
    ///   - data: the bytes to add.
    ///   - key: the value's name, as in `read(_:)`.
    /// - Throws: `SIWAError.storage` when `key` is not such a name or the bytes cannot be added;
    ///   `FileManager`'s error when `directory` cannot be created.
    public func append(_ data: Data, to key: String) throws {
        let path = try self.path(key)
        try FileManager.default.createDirectory(
            atPath: directory.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let created = !FileManager.default.fileExists(atPath: path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SIWAError.storage("cannot open \(path): errno \(errno)") }
        defer { close(descriptor) }
        let length = lseek(descriptor, 0, SEEK_END)
        guard length >= 0, writeFully(descriptor, data), fsync(descriptor) == 0 else {
            let failure = errno
            if length >= 0 { _ = ftruncate(descriptor, length) }
            throw SIWAError.storage("cannot append to \(path): errno \(failure)")
        }
        if created { syncDirectory() }
    }

    /// Deletes the file of `key`, if any.
    /// - Parameter key: the value's name, as in `read(_:)`.
    /// - Throws: `SIWAError.storage` when `key` is not such a name or the file cannot be deleted.
    public func delete(_ key: String) throws {
        let path = try self.path(key)
        guard unlink(path) == 0 || errno == ENOENT else { throw SIWAError.storage("cannot delete \(path): errno \(errno)") }
        syncDirectory()
    }

    /// The most characters of a key.
    static let maximumKeyLength = 128

    /// The file of `key`; keys are names, never paths.
    private func path(_ key: String) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard !key.isEmpty, !key.hasPrefix("."), key.count <= Self.maximumKeyLength, key.allSatisfy(allowed.contains) else {
            throw SIWAError.storage("not a storage key: \(key)")
        }
        return directory.appendingPathComponent(key).path
    }

    /// Makes a rename or unlink in the directory durable.
    private func syncDirectory() {
        let descriptor = open(directory.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}

/// Writes all of `data` to `descriptor` (outside `FileStorage`, whose `write` would hide `write(2)`).
private func writeFully(_ descriptor: Int32, _ data: Data) -> Bool {
    data.withUnsafeBytes { buffer -> Bool in
        var offset = 0
        while offset < buffer.count {
            let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }
}
