/// Strict base64url (RFC 4648 §5) without padding, as JOSE uses it (RFC 7515 §2).
///
/// Decoding rejects padding, any character outside the URL alphabet (`+`, `/`, whitespace included),
/// a length that leaves a single character (6 bits cannot form a byte), and non-canonical trailing
/// bits (so each byte string has exactly one encoding, and a token cannot be altered without
/// changing its signature input). A 256-entry table keeps decoding at well under a microsecond
/// per token (docs/PERFORMANCE.md: Foundation's base64 is 100x slower).
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0...63 for alphabet bytes, 0xFF for every other byte.
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

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

    /// Decodes strict unpadded base64url from raw bytes (a slice of a request body, for example).
    package static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        let remainder = input.count % 4
        if remainder == 1 { return nil }
        let outputCount = input.count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        // Written in place: no allocation per quantum (this runs three times per token).
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            table.withUnsafeBufferPointer { table in
                var index = 0
                var out = 0
                let whole = input.count - remainder
                while index < whole {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])]
                    let d = table[Int(input[index + 3])]
                    // 0xFF in any of the four sets the top bits of the OR: one branch for the whole quantum.
                    if (a | b | c | d) & 0xC0 != 0 {
                        valid = false
                        return
                    }
                    buffer[out] = a << 2 | b >> 4
                    buffer[out + 1] = (b & 0x0F) << 4 | c >> 2
                    buffer[out + 2] = (c & 0x03) << 6 | d
                    index += 4
                    out += 3
                }
                switch remainder {
                case 2:
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    // Two characters carry 12 bits for 8: the low 4 bits must be zero.
                    if (a | b) & 0xC0 != 0 || b & 0x0F != 0 {
                        valid = false
                        return
                    }
                    buffer[out] = a << 2 | b >> 4
                    out += 1
                case 3:
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])]
                    // Three characters carry 18 bits for 16: the low 2 bits must be zero.
                    if (a | b | c) & 0xC0 != 0 || c & 0x03 != 0 {
                        valid = false
                        return
                    }
                    buffer[out] = a << 2 | b >> 4
                    buffer[out + 1] = (b & 0x0F) << 4 | c >> 2
                    out += 2
                default:
                    break
                }
                initialized = out
            }
        }
        return valid ? output : nil
    }
}
