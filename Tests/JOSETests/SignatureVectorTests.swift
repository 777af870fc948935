import Foundation
import JOSE
import SIWAFixtures
import Synchronization
import Testing

/// RFC 7515/7520 signature vectors, run through our OpenSSL layer.
@Suite struct SignatureVectorTests {
    struct Vector: Decodable {
        let id: String
        let alg: String
        let compact: String?
        let public_jwk: [String: String]
        let private_jwk: [String: String]?
        let cookbook_output: CookbookOutput?
        struct CookbookOutput: Decodable { let compact: String }
        var token: String { compact ?? cookbook_output!.compact }
    }

    struct File: Decodable { let vectors: [Vector] }

    static func vectors() throws -> [Vector] {
        try Fixtures.decode(File.self, from: "jose/rfc7515_rfc7520_vectors.json").vectors
    }

    @Test("RFC 7515 A.2, A.3 (high-S and its low-S twin) and RFC 7520 4.1 verify; a changed byte does not")
    func rfcVectorsVerify() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count == 4)
        for vector in vectors {
            let jws = try CompactJWS(vector.token)
            let tampered = jws.signingInput.dropLast() + [jws.signingInput.last! ^ 1]
            switch vector.alg {
            case "RS256":
                let key = try RSAPublicKey(modulus: vector.public_jwk["n"]!, exponent: vector.public_jwk["e"]!)
                #expect(key.isValidSignature(jws.signature, for: jws.signingInput), "\(vector.id)")
                #expect(!key.isValidSignature(jws.signature, for: tampered), "\(vector.id)")
            case "ES256":
                let key = try P256PublicKey(x: vector.public_jwk["x"]!, y: vector.public_jwk["y"]!)
                #expect(key.isValidSignature(jws.signature, for: jws.signingInput), "\(vector.id)")
                #expect(!key.isValidSignature(jws.signature, for: tampered), "\(vector.id)")
            default:
                Issue.record("unexpected alg \(vector.alg)")
            }
        }
    }

    @Test("RS256 signing with the RFC private keys reproduces the RFC signatures exactly")
    func rsaSigningIsDeterministic() throws {
        for vector in try Self.vectors() where vector.alg == "RS256" {
            let jws = try CompactJWS(vector.token)
            let key = try RSAPrivateKey(jwk: vector.private_jwk!)
            #expect(try key.signature(for: jws.signingInput) == jws.signature, "\(vector.id)")
        }
    }

    @Test("ES256 signatures we make are 64 bytes of R||S and verify with the public key only")
    func es256RoundTrip() throws {
        let vector = try Self.vectors().first { $0.id == "rfc7515-A.3-ES256" }!
        let jwk = vector.private_jwk!
        let key = try P256PrivateKey(x: jwk["x"]!, y: jwk["y"]!, d: jwk["d"]!)
        let message = Array("header.payload".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.count == 64)
        let publicKey = try P256PublicKey(x: jwk["x"]!, y: jwk["y"]!)
        #expect(publicKey.isValidSignature(signature, for: message))
        #expect(!publicKey.isValidSignature(signature, for: Array("header.payloaD".utf8)))
        // DER is not the JOSE form: the same signature converted to DER is refused as raw.
        let der = ECDSASignature.der(fromRaw: signature)!
        #expect(!publicKey.isValidSignature(der, for: message))
        #expect(publicKey.isValidSignature(der: der, for: message))
        #expect(ECDSASignature.raw(fromDER: der) == signature)
    }

    @Test(
        "One key signs on many threads at once, reusing its signing contexts: every ES256 signature verifies and differs, every RS256 one is the RFC's"
    )
    func concurrentSigning() throws {
        let vectors = try Self.vectors()
        let ecJWK = vectors.first { $0.id == "rfc7515-A.3-ES256" }!.private_jwk!
        let ecKey = try P256PrivateKey(x: ecJWK["x"]!, y: ecJWK["y"]!, d: ecJWK["d"]!)
        let ecPublic = try P256PublicKey(x: ecJWK["x"]!, y: ecJWK["y"]!)
        let rsaVector = vectors.first { $0.alg == "RS256" }!
        let rsaKey = try RSAPrivateKey(jwk: rsaVector.private_jwk!)
        let rsaJWS = try CompactJWS(rsaVector.token)
        let message = Array("header.payload".utf8)
        let results = Mutex<(ec: [[UInt8]], failures: Int)>(([], 0))
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            for _ in 0..<20 {
                let ec = try? ecKey.signature(for: message)
                let rsa = try? rsaKey.signature(for: rsaJWS.signingInput)
                let good = ec.map { ecPublic.isValidSignature($0, for: message) } == true && rsa == rsaJWS.signature
                results.withLock { results in
                    if let ec { results.ec.append(ec) }
                    if !good { results.failures += 1 }
                }
            }
        }
        let (signatures, failures) = results.withLock { $0 }
        #expect(failures == 0)
        #expect(signatures.count == 320)
        #expect(Set(signatures).count == 320)
    }

    @Test("P-256 keys round-trip through PKCS#8 PEM (the .p8 format) and SPKI PEM")
    func p256PEM() throws {
        let key = try P256PrivateKey()
        let pem = try key.pem()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try P256PrivateKey(pem: pem)
        let publicKey = try P256PublicKey(pem: key.publicKey.pem())
        let message = Array("m".utf8)
        #expect(publicKey.isValidSignature(try reloaded.signature(for: message), for: message))
        #expect(publicKey.uncompressedPoint == key.publicKey.uncompressedPoint)
        #expect(throws: OpenSSLError(.invalidKey, reason: "")) { try P256PrivateKey(pem: try RSAPrivateKey().pem()) }
        #expect(throws: OpenSSLError(.invalidKey, reason: "")) {
            try P256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
    }

    @Test("RSA keys round-trip through PEM and expose n and e")
    func rsaPEM() throws {
        let key = try RSAPrivateKey(bits: 2048)
        let reloaded = try RSAPrivateKey(pem: key.pem())
        let publicKey = try RSAPublicKey(pem: key.publicKey.pem())
        #expect(publicKey.bitCount == 2048)
        #expect(publicKey.exponent == [1, 0, 1])
        let rebuilt = try RSAPublicKey(modulus: publicKey.modulus, exponent: publicKey.exponent)
        let message = Array("m".utf8)
        #expect(rebuilt.isValidSignature(try reloaded.signature(for: message), for: message))
        #expect(throws: OpenSSLError(.invalidKey, reason: "")) { try RSAPublicKey(modulus: "", exponent: "AQAB") }
        #expect(throws: OpenSSLError(.invalidKey, reason: "")) { try RSAPublicKey(modulus: "AA==", exponent: "AQAB") }
    }
}
