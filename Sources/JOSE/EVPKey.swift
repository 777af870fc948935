internal import COpenSSL
import Synchronization

/// One OpenSSL `EVP_PKEY`, owned (+1): freed with `EVP_PKEY_free` in `deinit`.
///
/// `@unchecked Sendable`: the key is immutable after init, and openssl-threads(7) allows
/// read-only use of one `EVP_PKEY` from many threads. A context is never used by two threads at
/// once: signing and verification each take an idle one (`IdleContexts`).
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Public-key contexts initialised once for SHA-256 signing or verification with this key
    /// (`EVP_PKEY_sign_init` or `EVP_PKEY_verify_init`, then `EVP_PKEY_CTX_set_signature_md`) and
    /// then reused for each signature. Initialising a context (algorithm fetch, key checks) costs
    /// about as much as the RSA verification or the P-256 signature itself, and so does
    /// duplicating an initialised digest context per call (docs/PERFORMANCE.md, "Token
    /// verification"); a reused `EVP_PKEY_CTX` costs neither. A context is used by one thread at a
    /// time: taken from its slots, used, and put back.
    private enum Operation {
        case sign, verify
    }

    /// Idle contexts of each operation.
    private let signContexts = IdleContexts()
    private let verifyContexts = IdleContexts()

    /// Takes ownership of a key returned by a `new`/`get1`/`fromdata` call.
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        while let context = signContexts.take() ?? verifyContexts.take() { EVP_PKEY_CTX_free(context) }
        EVP_PKEY_free(pointer)
    }

    /// A fresh context for `operation`, or nil if OpenSSL refuses the key for it with SHA-256.
    private func makeContext(_ operation: Operation) -> OpaquePointer? {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { return nil }
        let initialised =
            switch operation {
            case .sign: EVP_PKEY_sign_init(context)
            case .verify: EVP_PKEY_verify_init(context)
            }
        var ready = initialised == 1 && EVP_PKEY_CTX_set_signature_md(context, SHA256.algorithm.pointer) == 1
        if ready, isA("RSA") {
            ready = EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
        }
        guard ready else {
            EVP_PKEY_CTX_free(context)
            return nil
        }
        return context
    }

    /// Runs `body` with an idle context for `operation` (or a new one), then puts it back.
    /// - Returns: nil when no context could be made.
    private func withContext<Result>(_ operation: Operation, _ body: (OpaquePointer) throws -> Result) rethrows -> Result? {
        let idle =
            switch operation {
            case .sign: signContexts
            case .verify: verifyContexts
            }
        guard let context = idle.take() ?? makeContext(operation) else { return nil }
        defer { if !idle.put(context) { EVP_PKEY_CTX_free(context) } }
        return try body(context)
    }

    /// The key size in bits (`EVP_PKEY_get_bits`): the modulus for RSA, the field for EC.
    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// Whether the key is of the given OpenSSL type (`"RSA"`, `"EC"`).
    func isA(_ type: String) -> Bool { EVP_PKEY_is_a(pointer, type) == 1 }

    // MARK: Building keys

    /// A parameter of a key built with `OSSL_PARAM_BLD`.
    enum Parameter {
        case bigNumber(String, [UInt8])
        case octets(String, [UInt8])
        case text(String, String)
    }

    /// Builds a key from parameters with `OSSL_PARAM_BLD` and `EVP_PKEY_fromdata`.
    /// - Parameters:
    ///   - type: the key type, `"RSA"` or `"EC"`.
    ///   - parameters: the key's components, named by `OSSL_PKEY_PARAM_*`.
    ///   - includesPrivate: whether to import a key pair or only the public key.
    /// - Throws: `OpenSSLError(.invalidKey)` with OpenSSL's error queue.
    static func fromParameters(type: String, _ parameters: [Parameter], includesPrivate: Bool) throws -> EVPKey {
        ERR_clear_error()
        guard let builder = OSSL_PARAM_BLD_new() else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "OSSL_PARAM_BLD_new")
        }
        defer { OSSL_PARAM_BLD_free(builder) }
        var bigNumbers: [OpaquePointer] = []
        defer { for number in bigNumbers { BN_free(number) } }
        var buffers: [UnsafeMutableRawBufferPointer] = []
        defer { for buffer in buffers { buffer.deallocate() } }

        // The builder keeps pointers to names and values, not copies, until OSSL_PARAM_BLD_to_param:
        // both must stay alive until then.
        func retained(_ bytes: [UInt8]) -> UnsafeMutableRawPointer {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            buffer.copyBytes(from: bytes)
            buffers.append(buffer)
            return buffer.baseAddress!
        }
        func retainedName(_ name: String) -> UnsafePointer<CChar> {
            UnsafePointer(retained(Array(name.utf8) + [0]).assumingMemoryBound(to: CChar.self))
        }
        for parameter in parameters {
            let pushed: Int32
            switch parameter {
            case .bigNumber(let name, let bytes):
                guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
                    throw OpenSSLError.drainingQueue(.operationFailed, reason: "BN_bin2bn")
                }
                bigNumbers.append(number)
                pushed = OSSL_PARAM_BLD_push_BN(builder, retainedName(name), number)
            case .octets(let name, let bytes):
                pushed = OSSL_PARAM_BLD_push_octet_string(builder, retainedName(name), retained(bytes), bytes.count)
            case .text(let name, let value):
                let text = retained(Array(value.utf8) + [0]).assumingMemoryBound(to: CChar.self)
                pushed = OSSL_PARAM_BLD_push_utf8_string(builder, retainedName(name), text, 0)
            }
            guard pushed == 1 else {
                throw OpenSSLError.drainingQueue(.operationFailed, reason: "OSSL_PARAM_BLD_push")
            }
        }
        guard let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "OSSL_PARAM_BLD_to_param")
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_PKEY_CTX_new_from_name(\(type))")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        let selection = includesPrivate ? COpenSSL_EVP_PKEY_KEYPAIR() : COpenSSL_EVP_PKEY_PUBLIC_KEY()
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &key, selection, params) == 1,
            let key
        else {
            throw OpenSSLError.drainingQueue(.invalidKey, reason: "EVP_PKEY_fromdata(\(type))")
        }
        return EVPKey(takingOwnershipOf: key)
    }

    /// Generates a fresh key.
    /// - Parameter configure: sets the size or curve on the keygen context.
    static func generate(type: String, configure: (OpaquePointer) -> Int32) throws -> EVPKey {
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_PKEY_CTX_new_from_name(\(type))")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_PKEY_generate(\(type))")
        }
        return EVPKey(takingOwnershipOf: key)
    }

    /// Reads the first key of a PEM text: a private key (PKCS#8 `PRIVATE KEY`, or the
    /// traditional `RSA PRIVATE KEY`/`EC PRIVATE KEY`) or a public key (`PUBLIC KEY`).
    /// - Throws: `OpenSSLError(.invalidKey)` if the text holds no such key.
    static func fromPEM(_ pem: String, isPrivate: Bool) throws -> EVPKey {
        ERR_clear_error()
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return isPrivate ? PEM_read_bio_PrivateKey(bio, nil, nil, nil) : PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else {
            throw OpenSSLError.drainingQueue(.invalidKey, reason: isPrivate ? "no private key in PEM" : "no public key in PEM")
        }
        return EVPKey(takingOwnershipOf: key)
    }

    /// The key as PEM: PKCS#8 `PRIVATE KEY` or SubjectPublicKeyInfo `PUBLIC KEY`.
    func pem(isPrivate: Bool) throws -> String {
        ERR_clear_error()
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "BIO_new")
        }
        defer { BIO_free(bio) }
        let written =
            isPrivate
            ? PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil)
            : PEM_write_bio_PUBKEY(bio, pointer)
        var data: UnsafeMutablePointer<CChar>?
        let length = COpenSSL_BIO_get_mem_data(bio, &data)
        guard written == 1, length > 0, let data else {
            throw OpenSSLError.drainingQueue(.operationFailed, reason: "PEM_write_bio")
        }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }

    // MARK: Reading parameters

    /// A big-number parameter (`EVP_PKEY_get_bn_param`) as unsigned big-endian bytes.
    func bigNumber(_ name: String, paddedTo width: Int = 0) -> [UInt8]? {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &number) == 1, let number else {
            ERR_clear_error()
            return nil
        }
        defer { BN_free(number) }
        let count = max(Int((BN_num_bits(number) + 7) / 8), width)
        var bytes = [UInt8](repeating: 0, count: count)
        guard BN_bn2binpad(number, &bytes, Int32(count)) == count else { return nil }
        return bytes
    }

    /// An octet-string parameter (`EVP_PKEY_get_octet_string_param`), such as an EC public point.
    func octets(_ name: String, capacity: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: capacity)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pointer, name, &bytes, capacity, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return Array(bytes.prefix(length))
    }

    /// A UTF-8 string parameter (`EVP_PKEY_get_utf8_string_param`), such as an EC group name.
    func text(_ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pointer, name, &buffer, buffer.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Signatures with SHA-256

    /// Verifies `signature` over `message` with SHA-256: PKCS#1 v1.5 for RSA keys, DER-encoded
    /// ECDSA for EC keys. The message is hashed once (`EVP_Digest`) and the digest verified with
    /// `EVP_PKEY_verify`, which is what `EVP_DigestVerify` does in two steps.
    /// - Returns: true only when OpenSSL returns exactly 1; failures of any kind are false.
    func verifySHA256(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        // The error queue is not read here, so it is not cleared first (a clear costs about as
        // much as hashing 100 bytes); a refusal's entries are cleared below.
        var digest = SHA256.Digest()
        SHA256.hash(message, into: &digest)
        let result = withContext(.verify) { context in
            withUnsafeBytes(of: &digest.bytes) { digest in
                EVP_PKEY_verify(
                    context, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
                    digest.baseAddress?.assumingMemoryBound(to: UInt8.self), digest.count)
            }
        }
        // A bad signature leaves entries on the queue; it is a result, not an error.
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// Signs `message` with SHA-256: PKCS#1 v1.5 for RSA, DER ECDSA for EC. The message is hashed
    /// once (`EVP_Digest`) and the digest signed with `EVP_PKEY_sign` on a pooled context, which
    /// is what `EVP_DigestSign` does in two steps.
    func signSHA256(message: UnsafeRawBufferPointer) throws -> [UInt8] {
        ERR_clear_error()
        var digest = SHA256.Digest()
        SHA256.hash(message, into: &digest)
        let signature = try withContext(.sign) { context in
            try withUnsafeBytes(of: &digest.bytes) { digest in
                let input = digest.baseAddress?.assumingMemoryBound(to: UInt8.self)
                var length = 0
                guard EVP_PKEY_sign(context, nil, &length, input, digest.count) == 1 else {
                    throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_PKEY_sign")
                }
                var signature = [UInt8](repeating: 0, count: length)
                guard EVP_PKEY_sign(context, &signature, &length, input, digest.count) == 1 else {
                    throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_PKEY_sign")
                }
                return Array(signature.prefix(length))
            }
        }
        guard let signature else { throw OpenSSLError.drainingQueue(.operationFailed, reason: "EVP_PKEY_sign_init") }
        return signature
    }
}

/// Runs `body` with the bytes of any contiguous collection, copying only if it has no contiguous storage.
@inline(__always)
func withBytes<Bytes: Collection<UInt8>, Result>(_ bytes: Bytes, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    if let result = try bytes.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return try Array(bytes).withUnsafeBytes { try body($0) }
}

/// Up to 64 idle `EVP_PKEY_CTX`s of one operation of one key, each in a slot of its own. Taking
/// one is an atomic exchange of a slot with zero, putting one back an atomic compare-and-exchange
/// of an empty slot; no thread ever waits for another. A `Mutex` around an array did the same job
/// and was taken twice by every verification from dozens of worker threads on two cores: Swift's
/// `Mutex` on Linux is a priority-inheriting futex, which hands the lock to a sleeping waiter
/// (docs/PERFORMANCE.md, "Signing").
/// A slot holds a context that no thread uses; the exchange that takes it (acquiring) sees every
/// write of the thread whose exchange put it there (releasing).
private final class IdleContexts: Sendable {
    /// The contexts' addresses; zero for an empty slot.
    private let slots: InlineArray<64, Atomic<Int>> = InlineArray { _ in Atomic(0) }

    /// An idle context, now the caller's; nil when there is none.
    func take() -> OpaquePointer? {
        for index in slots.indices where slots[index].load(ordering: .relaxed) != 0 {
            let address = slots[index].exchange(0, ordering: .acquiring)
            if address != 0 { return OpaquePointer(bitPattern: address) }
        }
        return nil
    }

    /// Keeps `context` for the next caller; false when every slot is full (the caller frees it).
    func put(_ context: OpaquePointer) -> Bool {
        let address = Int(bitPattern: context)
        for index in slots.indices
        where slots[index].compareExchange(expected: 0, desired: address, ordering: .releasing).exchanged {
            return true
        }
        return false
    }
}
