import Foundation

#if canImport(CryptoKit)
    import CryptoKit
#else
    // Linux, where the package's tests run SIWAKit: OpenSSL, as on the server.
    import COpenSSL
#endif

/// The nonce of one sign-in. Apple gets its SHA-256 (`hashed`, in
/// `ASAuthorizationAppleIDRequest.nonce`) and puts it in the identity token; the server gets the raw
/// `value` with the token and accepts each nonce once, so a token caught in transit cannot be
/// replayed.
public struct SignInNonce: Sendable, Equatable {
    /// The raw nonce: 32 random bytes, base64url without padding.
    public let value: String

    /// A new random nonce.
    public init() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.value = Self.base64URL(bytes)
    }

    /// `bytes` in base64url without padding (RFC 4648 §5).
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A nonce of the app's own making.
    /// - Parameter value: the raw nonce; use it for one sign-in only, and make it hard to guess.
    public init(value: String) {
        self.value = value
    }

    /// The SHA-256 of `value` in lowercase hex: what Apple is given.
    public var hashed: String {
        Self.sha256(Array(value.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The SHA-256 of `bytes`: CryptoKit's on Apple's platforms, OpenSSL's on Linux.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
            Array(SHA256.hash(data: bytes))
        #else
            var digest = [UInt8](repeating: 0, count: 32)
            _ = SHA256(bytes, bytes.count, &digest)
            return digest
        #endif
    }
}
