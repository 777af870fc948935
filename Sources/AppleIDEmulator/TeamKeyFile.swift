import Foundation
import JOSE

#if canImport(Glibc)
    import Glibc
#endif

/// A team's Sign in with Apple key as Apple lets you download it: a P-256 private key in PKCS#8 PEM,
/// named `AuthKey_<key id>.p8`. `appleid-emulator make-key` writes one for the emulator's team, and
/// siwa signs its client secrets with the same file.
package enum TeamKeyFile {
    /// Why a key file was not written.
    package struct Refusal: Error, CustomStringConvertible {
        package let description: String
    }

    /// Writes a new key `AuthKey_<keyID>.p8` into `directory` (mode 0600), never over an existing file.
    /// - Returns: the file's path.
    package static func write(keyID: String, directory: String) throws -> String {
        guard keyID.count == 10, keyID.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
            throw Refusal(description: "--key-id: expected 10 characters A-Z and 0-9, as Apple shows a key id")
        }
        let path = directory + "/AuthKey_\(keyID).p8"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw Refusal(description: "cannot write \(path): \(String(cString: strerror(errno))) (an existing key is never replaced)")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        try handle.write(contentsOf: Data(try P256PrivateKey().pem().utf8))
        return path
    }
}
