internal import COpenSSL

/// Conversions between the JOSE form of an ECDSA P-256 signature (R || S, 64 bytes) and DER.
package enum ECDSASignature {
    /// DER for a 64-byte R || S, or nil if the length is not exactly 64.
    package static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let r = BN_bin2bn(raw, 32, nil) else { return nil }
        guard let s = raw.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + 32, 32, nil) }) else {
            BN_free(r)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of r and s on success.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { return nil }
        defer { COpenSSL_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// R || S (32 bytes each) for a DER signature, or nil if it does not parse or a value is too long.
    package static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                ERR_clear_error()
                return nil
            }
            defer { ECDSA_SIG_free(signature) }
            // get0: borrowed, freed with the signature.
            guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else { return nil }
            var raw = [UInt8](repeating: 0, count: 64)
            let ok = raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
            return ok ? raw : nil
        }
    }
}
