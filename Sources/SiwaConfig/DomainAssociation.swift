/// Apple's domain-association file, for an operator whose Services ID registration asks for one:
/// siwa serves it at `/.well-known/apple-developer-domain-association.txt`. Apple's current
/// registration of a web domain needs no file, so by default there is none and that path is a 404.
/// The file lives where the operator put it (`siwa setup --domain-association` copies it into
/// /etc/siwa), never under a path the package owns, so an upgrade cannot replace it.
package struct DomainAssociation: Sendable, Equatable {
    /// The file it was read from (`SIWA_DOMAIN_ASSOCIATION_FILE`).
    package var path: String
    /// Its contents, served as they are.
    package var contents: [UInt8]

    package init(path: String, contents: [UInt8]) {
        self.path = path
        self.contents = contents
    }

    /// The path Apple fetches it from.
    package static let urlPath = "/.well-known/apple-developer-domain-association.txt"
    /// The largest file accepted: Apple's are a few KiB.
    package static let maximumBytes = 64 * 1024
}
