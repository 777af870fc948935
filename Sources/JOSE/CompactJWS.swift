package import StrictJSON

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
        try self.init(bytes: Array(token.utf8), maximumLength: maximumLength)
    }

    /// Splits and decodes the token in `bytes`.
    package init(bytes: [UInt8], maximumLength: Int = defaultMaximumLength) throws(JOSEError) {
        guard bytes.count <= maximumLength else {
            throw JOSEError(.tooLarge, reason: "token is \(bytes.count) bytes, limit \(maximumLength)")
        }
        var dots: [Int] = []
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else {
            throw JOSEError(.malformed, reason: "a compact JWS has exactly three dot-separated parts")
        }
        let headerBytes = bytes[..<dots[0]]
        let payloadBytes = bytes[(dots[0] + 1)..<dots[1]]
        let signatureBytes = bytes[(dots[1] + 1)...]
        guard !headerBytes.isEmpty, !payloadBytes.isEmpty else {
            throw JOSEError(.malformed, reason: "empty header or payload")
        }
        guard let headerJSON = Self.decode(headerBytes) else {
            throw JOSEError(.malformed, reason: "header is not strict base64url")
        }
        guard let payload = Self.decode(payloadBytes) else {
            throw JOSEError(.malformed, reason: "payload is not strict base64url")
        }
        guard let signature = Self.decode(signatureBytes) else {
            throw JOSEError(.malformed, reason: "signature is not strict base64url")
        }
        do {
            header = try JSONObject(parsing: headerJSON)
        } catch {
            throw JOSEError(.invalidJSON, reason: "header: \(error)")
        }
        signingInput = Array(bytes[..<dots[1]])
        self.payload = payload
        self.signature = signature
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

    private static func decode(_ slice: ArraySlice<UInt8>) -> [UInt8]? {
        slice.withUnsafeBytes { Base64URL.decode($0) }
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
