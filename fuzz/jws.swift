// libFuzzer target: compact JWS parsing as an identity token or a notification reaches it: split,
// decode the header and the payload, read the claims the verifier reads. Must not crash.
// Built by scripts/fuzz.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let jws = try? CompactJWS(bytes: bytes) else { return 0 }
    _ = try? jws.header.string("alg")
    _ = try? jws.header.string("kid")
    if let claims = try? jws.decodePayload() {
        for name in ["iss", "aud", "sub", "nonce", "c_hash", "email", "events"] { _ = try? claims.string(name) }
        for name in ["exp", "iat", "nbf", "auth_time"] { _ = try? claims.number(name) }
        _ = try? claims.integer("real_user_status")
        _ = try? claims.stringArray("aud")
    }
    return 0
}
