package import StrictJSON

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A JWS in compact serialization (RFC 7515 §7.1), split and checked for shape but not verified.
///
/// Parsing decodes the header (it names the algorithm and key) and the signature; the payload
/// stays encoded until `decodePayload()`, which a verifier calls only after the signature is good
/// (docs/SECURITY.md rule 1: nothing in the claims is looked at before that).
package struct CompactJWS: Sendable {
    /// The largest token accepted, in bytes. Apple's tokens are about 1 KB; this bounds the work an
    /// attacker can ask for.
    package static let defaultMaximumLength = 16 * 1024

    /// The protected header.
    package let header: JSONObject
    /// The ASCII bytes `BASE64URL(header) "." BASE64URL(payload)`: what the signature covers.
    package let signingInput: [UInt8]
    /// The decoded signature (possibly empty; an empty signature never verifies).
    package let signature: [UInt8]
    /// The decoded payload bytes; not to be interpreted before the signature is verified.
    package let payload: [UInt8]

    /// Splits and decodes `token`.
    /// - Parameter maximumLength: tokens longer than this are refused before any decoding.
    /// - Throws: `JOSEError` (`.tooLarge`, `.malformed`, `.invalidJSON`) for anything that is not
    ///   three strict base64url segments with a JSON object header.
    package init(_ token: some StringProtocol, maximumLength: Int = defaultMaximumLength) throws(JOSEError) {
        let count = token.utf8.count
        guard count <= maximumLength else {
            throw JOSEError(.tooLarge, reason: "token is \(count) bytes, limit \(maximumLength)")
        }
        try self.init(bytes: Array(token.utf8), maximumLength: maximumLength)
    }

    /// Splits and decodes the token in `bytes`.
    package init(bytes: [UInt8], maximumLength: Int = defaultMaximumLength) throws(JOSEError) {
        guard bytes.count <= maximumLength else {
            throw JOSEError(.tooLarge, reason: "token is \(bytes.count) bytes, limit \(maximumLength)")
        }
        let parts = try bytes.withUnsafeBytes { Self.split($0) }.get()
        do {
            header = try JSONObject(parsing: parts.header)
        } catch {
            throw JOSEError(.invalidJSON, reason: "header: \(error)")
        }
        signingInput = Array(bytes[..<parts.signingInputCount])
        payload = parts.payload
        signature = parts.signature
    }

    /// The three parts of a token, decoded.
    private struct Parts {
        var header: [UInt8]
        var payload: [UInt8]
        var signature: [UInt8]
        /// Where the second dot is.
        var signingInputCount: Int
    }

    /// Finds the two dots (with `memchr`, which reads the token a vector at a time, rather than a
    /// byte at a time) and decodes the three parts.
    private static func split(_ token: UnsafeRawBufferPointer) -> Result<Parts, JOSEError> {
        func malformed(_ reason: String) -> Result<Parts, JOSEError> { .failure(JOSEError(.malformed, reason: reason)) }
        let dot = Int32(UInt8(ascii: "."))
        guard let base = token.baseAddress, let first = memchr(base, dot, token.count).map({ base.distance(to: $0) }),
            let second = memchr(base + first + 1, dot, token.count - first - 1).map({ base.distance(to: $0) }),
            memchr(base + second + 1, dot, token.count - second - 1) == nil
        else {
            return malformed("a compact JWS has exactly three dot-separated parts")
        }
        guard first > 0, second > first + 1 else { return malformed("empty header or payload") }
        guard let header = Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[..<first])) else {
            return malformed("header is not strict base64url")
        }
        guard let payload = Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[(first + 1)..<second])) else {
            return malformed("payload is not strict base64url")
        }
        guard let signature = Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[(second + 1)...])) else {
            return malformed("signature is not strict base64url")
        }
        return .success(Parts(header: header, payload: payload, signature: signature, signingInputCount: second))
    }

    /// The payload parsed as a JSON object (a JWT claims set).
    /// - Throws: `JOSEError(.invalidJSON)` if it is not one JSON object with unique member names.
    package func decodePayload() throws(JOSEError) -> JSONObject {
        do {
            return try JSONObject(parsing: payload)
        } catch {
            throw JOSEError(.invalidJSON, reason: "payload: \(error)")
        }
    }
}

/// Why a JOSE object was refused before any cryptography ran.
package struct JOSEError: Error, Equatable, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        /// Longer than the configured limit.
        case tooLarge
        /// Not three strict base64url segments.
        case malformed
        /// The header or payload is not a JSON object with unique member names.
        case invalidJSON
    }

    package let code: Code
    package let reason: String

    package init(_ code: Code, reason: String) {
        self.code = code
        self.reason = reason
    }

    package var description: String { "JOSEError.\(code): \(reason)" }

    /// Errors compare by code only.
    package static func == (lhs: JOSEError, rhs: JOSEError) -> Bool { lhs.code == rhs.code }
}

extension CompactJWS {
    /// The compact serialization `BASE64URL(header).BASE64URL(claims).BASE64URL(signature)`, with
    /// `sign` given the signing input.
    package static func serialize(header: String, claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }
}
