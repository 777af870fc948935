#if canImport(Security)
    public import Foundation
    import Security

    /// Values in the Keychain as generic passwords of one service, readable after the device's first
    /// unlock (so a background refresh works while the device is locked), kept on this device only.
    /// With an access group, app extensions of the same team that share the group share the session.
    ///
    /// It uses the data protection keychain (`kSecUseDataProtectionKeychain`) on every platform. On
    /// macOS that keychain needs a signed app with a keychain access group or application identifier
    /// entitlement: an unsigned build (a command-line tool, `swift test`) gets
    /// `errSecMissingEntitlement` (-34018); use `FileStorage` there.
    public struct KeychainStorage: KeyValueStorage {
        /// The Keychain service of the items: one item per key, the key as the item's account.
        public let service: String
        /// The Keychain access group of the items; nil for the app's default group.
        public let accessGroup: String?

        /// A storage of the generic passwords of `service`, in `accessGroup` when given.
        /// - Parameters:
        ///   - service: the Keychain service, for example the app's bundle id.
        ///   - accessGroup: a Keychain access group of the app's entitlements, to share with extensions.
        public init(service: String, accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

        /// The value of `key`'s item.
        /// - Parameter key: the value's name (the item's account).
        /// - Returns: the value, or nil when there is no such item.
        /// - Throws: `SIWAError.storage` with the Keychain's message when the Keychain refuses the read
        ///   (for example before the device's first unlock).
        public func read(_ key: String) throws -> Data? {
            var query = baseQuery(key)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess else { throw failure("read", key, status) }
            return result as? Data
        }

        /// Stores `data` as the value of `key`'s item: updates the item, or adds it (readable after the
        /// device's first unlock, on this device only).
        /// - Parameters:
        ///   - data: the value.
        ///   - key: the value's name (the item's account).
        /// - Throws: `SIWAError.storage` with the Keychain's message when the Keychain refuses the write.
        public func write(_ data: Data, for key: String) throws {
            let update = [kSecValueData as String: data]
            let status = SecItemUpdate(baseQuery(key) as CFDictionary, update as CFDictionary)
            if status == errSecSuccess { return }
            guard status == errSecItemNotFound else { throw failure("update", key, status) }
            var item = baseQuery(key)
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw failure("add", key, added) }
        }

        /// Deletes `key`'s item, if any.
        /// - Parameter key: the value's name (the item's account).
        /// - Throws: `SIWAError.storage` with the Keychain's message when the Keychain refuses the deletion.
        public func delete(_ key: String) throws {
            let status = SecItemDelete(baseQuery(key) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw failure("delete", key, status) }
        }

        private func baseQuery(_ key: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: key,
                // The iOS-style Keychain on macOS too, where access groups work.
                kSecUseDataProtectionKeychain as String: true,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        private func failure(_ operation: String, _ key: String, _ status: OSStatus) -> SIWAError {
            let message = SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
            return .storage("Keychain \(operation) of \(key): \(message)")
        }
    }
#endif
