/// Where the configuration keeps the key material that a backup holds and a restore writes back:
/// the paths of `SIWA_DATA_KEYS_FILE`, `SIWA_ACCESS_KEYS_DIR`, `SIWA_LINK_SECRET_FILE`,
/// `SIWA_WEBHOOK_SECRET_FILE` and `SIWA_APPLE_PRIVATE_KEY_FILE`, read as paths only (a restore
/// runs before the files exist).
package struct KeyMaterialLocations: Sendable, Equatable {
    package var dataKeysFile: String?
    package var accessKeysDirectory: String?
    package var linkSecretFile: String?
    package var webhookSecretFile: String?
    package var applePrivateKeyFile: String?

    package init(environment: [String: String]) {
        func path(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        dataKeysFile = path("SIWA_DATA_KEYS_FILE")
        accessKeysDirectory = path("SIWA_ACCESS_KEYS_DIR")
        linkSecretFile = path("SIWA_LINK_SECRET_FILE")
        webhookSecretFile = path("SIWA_WEBHOOK_SECRET_FILE")
        applePrivateKeyFile = path("SIWA_APPLE_PRIVATE_KEY_FILE")
    }

    /// The configuration of the keys a restore needs before the key material is back: the
    /// database, the migrations and the logs, checked as `siwa serve` checks them; every other
    /// `SIWA_*` key is left out (its files may not exist yet).
    package static func restoreConfiguration(environment: [String: String]) throws -> AppConfig {
        let kept = ["SIWA_MIGRATIONS_DIR", "SIWA_LOG_LEVEL", "SIWA_LOG_FORMAT"]
        return try AppConfig(
            environment: environment.filter { !$0.key.hasPrefix("SIWA_") || $0.key.hasPrefix("SIWA_DB_") || kept.contains($0.key) })
    }
}
