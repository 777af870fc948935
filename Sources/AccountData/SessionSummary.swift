/// A session as its user sees it in the session list.
package struct SessionSummary: Sendable, Equatable {
    package var id: UInt64
    package var device: String?
    package var isWeb: Bool
    /// Unix seconds.
    package var createdAt: Int64
    package var lastUsedAt: Int64
    package var expiresAt: Int64

    package init(id: UInt64, device: String?, isWeb: Bool, createdAt: Int64, lastUsedAt: Int64, expiresAt: Int64) {
        self.id = id
        self.device = device
        self.isWeb = isWeb
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
    }
}
