/// A `Content-Type` value read as a media type (RFC 9110 §8.3.1): type and subtype compared
/// case-insensitively, parameters after `;` set aside.
struct MediaType {
    /// `type/subtype`, lowercased.
    let essence: String

    init?(_ value: String) {
        let essence = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
            .trimmingHTTPWhitespace.lowercased()
        let parts = essence.split(separator: "/", omittingEmptySubsequences: false)
        let token = { (part: Substring) in
            !part.isEmpty && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "!#$&-^_.+".contains($0)) }
        }
        guard parts.count == 2, token(parts[0]), token(parts[1]) else { return nil }
        self.essence = essence
    }
}
