import JOSE
import Testing

@Suite struct PBKDF2Tests {
    // PBKDF2-HMAC-SHA256: RFC 6070's inputs with the SHA-256 outputs published for them, and
    // RFC 7914 §11's 64-byte vector.
    @Test(
        "PBKDF2-HMAC-SHA256 gives the published vectors",
        arguments: [
            ("password", "salt", 1, 32, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
            ("password", "salt", 2, 32, "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"),
            ("password", "salt", 4096, 32, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
            (
                "passwd", "salt", 1, 64,
                "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
            ),
        ])
    func vectors(password: String, salt: String, iterations: Int, length: Int, expected: String) throws {
        let key = try PBKDF2.sha256(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations, length: length)
        #expect(hexString(key) == expected)
    }
}
