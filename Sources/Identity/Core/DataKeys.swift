package import Accounts
import Foundation
import JOSE

/// The keys that encrypt Apple's refresh tokens at rest: AES-256-GCM, each
/// ciphertext stored with the id of its key. The first key encrypts; every key decrypts, so a new
/// key is added at the top and the old one stays until no row uses it.
///
/// The file (`SIWA_DATA_KEYS_FILE`) has one key per line, `<id> <base64 of 32 bytes>`; `#` lines
/// are comments. The client id is the associated data, so a token cannot be moved to another client.
package struct DataKeys: Sendable {
    private let keys: [(id: String, key: [UInt8])]

    /// Parses the file's text.
    /// - Throws: a message naming the bad line (never its key).
    package init(text: String) throws(DataKeysError) {
        var keys: [(id: String, key: [UInt8])] = []
        for (number, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let fields = line.split(whereSeparator: \.isWhitespace)
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            guard fields.count == 2, let key = Data(base64Encoded: String(fields[1])), key.count == 32,
                fields[0].count <= 32, fields[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            else { throw DataKeysError(description: "line \(number + 1): expected `<id> <base64 of 32 random bytes>`") }
            guard !keys.contains(where: { $0.id == fields[0] }) else {
                throw DataKeysError(description: "line \(number + 1): key id \(fields[0]) appears twice")
            }
            keys.append((String(fields[0]), Array(key)))
        }
        guard !keys.isEmpty else { throw DataKeysError(description: "no key; add a line `<id> <base64 of 32 random bytes>`") }
        self.keys = keys
    }

    /// The id of the key that encrypts.
    package var currentKeyID: String { keys[0].id }

    /// Every key's id, the current one first.
    package var keyIDs: [String] { keys.map(\.id) }

    /// Encrypts Apple's refresh token minted for `clientID`.
    package func seal(_ token: String, clientID: String) throws -> SealedAppleToken {
        let key = keys[0]
        let box = try AES256GCM.seal(Array(token.utf8), key: key.key, associatedData: Array(clientID.utf8))
        return SealedAppleToken(ciphertext: box, keyID: key.id, clientID: clientID)
    }

    /// A key for `purpose` derived from each data key (HMAC-SHA256 of the purpose under it), the
    /// current key's first: a key that protects something else than Apple's tokens is never the
    /// data key itself.
    package func derivedKeys(purpose: String) -> [[UInt8]] {
        keys.map { HMACSHA256.authenticationCode(key: $0.key, message: Array(purpose.utf8)) }
    }

    /// Decrypts a stored token; nil when its key is gone or it was tampered with.
    package func open(_ sealed: SealedAppleToken) -> String? {
        guard let key = keys.first(where: { $0.id == sealed.keyID }),
            let plaintext = try? AES256GCM.open(sealed.ciphertext, key: key.key, associatedData: Array(sealed.clientID.utf8))
        else { return nil }
        return String(decoding: plaintext, as: UTF8.self)
    }
}

package struct DataKeysError: Error, CustomStringConvertible {
    package let description: String
}
