/// Strict base64url (RFC 4648 §5) without padding, as JOSE uses it (RFC 7515 §2).
///
/// Decoding rejects padding, any character outside the URL alphabet (`+`, `/`, whitespace included),
/// a length that leaves a single character (6 bits cannot form a byte), and non-canonical trailing
/// bits (so each byte string has exactly one encoding, and a token cannot be altered without
/// changing its signature input). Lookup tables keep decoding at well under a microsecond
/// per token (docs/PERFORMANCE.md: Foundation's base64 is 100x slower).
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes` without padding.
    package static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        let input = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(chunk >> 18)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            output.append(alphabet[Int(chunk >> 6 & 63)])
            output.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let chunk = UInt32(input[index]) << 16
            output += [alphabet[Int(chunk >> 18)], alphabet[Int(chunk >> 12 & 63)]]
        case 2:
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output += [alphabet[Int(chunk >> 18)], alphabet[Int(chunk >> 12 & 63)], alphabet[Int(chunk >> 6 & 63)]]
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes strict unpadded base64url.
    /// - Returns: the bytes, or nil for any input that is not the one canonical encoding of some bytes.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    /// For each byte, its 6-bit value already shifted to its place in a quantum's 24 bits, one
    /// table of 256 per position in the quantum; `invalid` (a bit no valid character sets) for
    /// bytes outside the alphabet. A quantum is then four loads and three ORs.
    private static let shifted: [UInt32] = {
        var table = [UInt32](repeating: invalid, count: 4 * 256)
        for (index, byte) in alphabet.enumerated() {
            for position in 0..<4 { table[position * 256 + Int(byte)] = UInt32(index) << (18 - 6 * position) }
        }
        return table
    }()

    private static let invalid: UInt32 = 1 << 31

    /// Decodes strict unpadded base64url from raw bytes (a slice of a request body, for example).
    package static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        let remainder = input.count % 4
        if remainder == 1 { return nil }
        let outputCount = input.count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        // Written in place: no allocation per quantum (this runs three times per token).
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            shifted.withUnsafeBufferPointer { table in
                var index = 0
                var out = 0
                let whole = input.count - remainder
                while index < whole {
                    let bits =
                        table[Int(input[index])] | table[256 &+ Int(input[index &+ 1])] | table[512 &+ Int(input[index &+ 2])]
                        | table[768 &+ Int(input[index &+ 3])]
                    // `invalid` in any of the four sets the top bit of the OR: one branch for the whole quantum.
                    if bits & invalid != 0 {
                        valid = false
                        return
                    }
                    buffer[out] = UInt8(truncatingIfNeeded: bits &>> 16)
                    buffer[out &+ 1] = UInt8(truncatingIfNeeded: bits &>> 8)
                    buffer[out &+ 2] = UInt8(truncatingIfNeeded: bits)
                    index &+= 4
                    out &+= 3
                }
                switch remainder {
                case 2:
                    let bits = table[Int(input[index])] | table[256 &+ Int(input[index &+ 1])]
                    // Two characters carry 12 bits for 8: the low 4 bits must be zero.
                    if bits & invalid != 0 || bits & 0xF000 != 0 {
                        valid = false
                        return
                    }
                    buffer[out] = UInt8(truncatingIfNeeded: bits &>> 16)
                    out &+= 1
                case 3:
                    let bits = table[Int(input[index])] | table[256 &+ Int(input[index &+ 1])] | table[512 &+ Int(input[index &+ 2])]
                    // Three characters carry 18 bits for 16: the low 2 bits must be zero.
                    if bits & invalid != 0 || bits & 0xC0 != 0 {
                        valid = false
                        return
                    }
                    buffer[out] = UInt8(truncatingIfNeeded: bits &>> 16)
                    buffer[out &+ 1] = UInt8(truncatingIfNeeded: bits &>> 8)
                    out &+= 2
                default:
                    break
                }
                initialized = out
            }
        }
        return valid ? output : nil
    }
}
