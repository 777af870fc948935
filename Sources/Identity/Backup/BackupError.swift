/// Why `siwa backup` or `siwa restore` stopped: the code decides the exit status, the description
/// is the operator's message (it names files, keys and ids, never a key's or a token's value).
package struct BackupError: Error, CustomStringConvertible, Equatable {
    package enum Code: Sendable, Equatable {
        /// The backup is damaged, altered or unreadable: a checksum differs, the manifest or the
        /// key bundle cannot be read, a wrong passphrase.
        case damaged
        /// A part the restore needs is not there: the key bundle, a data key the tokens need.
        case missing
        /// A data key under the right id that does not open the tokens sealed under it.
        case wrongKey
        /// The target is not empty (a database with tables, a key file that exists) and no flag
        /// allows replacing it.
        case targetNotEmpty
    }

    package let code: Code
    package let description: String

    package init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    package static func == (lhs: BackupError, rhs: BackupError) -> Bool { lhs.code == rhs.code }
}
