#if canImport(Security)
    public import Foundation
    import Security

    /// Values in the Keychain as generic passwords of one service, readable after the device's first
    /// unlock (so a background refresh works while the device is locked), kept on this device only.
    /// With an access group, app extensions of the same team that share the group share the session.
    public struct KeychainStorage: KeyValueStorage {
        public let service: String
        public let accessGroup: String?

        /// - Parameters:
        ///   - service: the Keychain service, for example the app's bundle id.
        ///   - accessGroup: a Keychain access group of the app's entitlements, to share with extensions.
        public init(service: String, accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

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
