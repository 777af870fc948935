import Foundation
import JOSE
import SIWAFixtures
import Testing

/// Google Wycheproof vectors (Apache-2.0, see Tests/Fixtures/PROVENANCE.md) through our OpenSSL layer.
/// "acceptable" cases are legacy encodings that a library may take or refuse: they are skipped.
@Suite struct WycheproofTests {
    struct File: Decodable {
        let testGroups: [Group]
    }
    struct Group: Decodable {
        let publicKey: PublicKey
        let tests: [Case]
    }
    struct PublicKey: Decodable {
        let modulus: String?
        let publicExponent: String?
        let uncompressed: String?
    }
    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let msg: String
        let sig: String
        let result: String
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// Runs every decided case of `file` and returns how many ran.
    static func run(_ file: String, verify: (Group, Case) throws -> Bool) throws -> Int {
        var count = 0
        for group in try Fixtures.decode(File.self, from: "wycheproof/\(file)").testGroups {
            for test in group.tests where test.result != "acceptable" {
                let accepted = try verify(group, test)
                #expect(accepted == (test.result == "valid"), "tcId \(test.tcId): \(test.comment)")
                count += 1
            }
        }
        return count
    }

    @Test("RSA PKCS#1 v1.5 SHA-256, 2048-bit: every valid and invalid case")
    func rsa() throws {
        let count = try Self.run("rsa_signature_2048_sha256_test.json") { group, test in
            let key = try RSAPublicKey(
                modulus: Self.bytes(group.publicKey.modulus!), exponent: Self.bytes(group.publicKey.publicExponent!))
            return key.isValidSignature(Self.bytes(test.sig), for: Self.bytes(test.msg))
        }
        #expect(count == 258)
    }

    @Test("ECDSA P-256 SHA-256, DER signatures: every case")
    func ecdsaDER() throws {
        let count = try Self.run("ecdsa_secp256r1_sha256_test.json") { group, test in
            let key = try P256PublicKey(uncompressedPoint: Self.bytes(group.publicKey.uncompressed!))
            return key.isValidSignature(der: Self.bytes(test.sig), for: Self.bytes(test.msg))
        }
        #expect(count == 484)
    }

    @Test("ECDSA P-256 SHA-256, IEEE P1363 (JOSE R||S) signatures: every case")
    func ecdsaP1363() throws {
        let count = try Self.run("ecdsa_secp256r1_sha256_p1363_test.json") { group, test in
            let key = try P256PublicKey(uncompressedPoint: Self.bytes(group.publicKey.uncompressed!))
            return key.isValidSignature(Self.bytes(test.sig), for: Self.bytes(test.msg))
        }
        #expect(count == 262)
    }
}
