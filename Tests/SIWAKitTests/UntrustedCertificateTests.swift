import Foundation
import SIWAKit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server whose certificate the system does not trust (a self-signed one, as the local stack's),
/// reached without `DevelopmentTransport`: the error says what to do, in a sentence.
@Suite(.timeLimit(.minutes(1))) struct UntrustedCertificateTests {
    /// `openssl s_server` on a loopback port with a new self-signed certificate.
    final class SelfSignedServer {
        let process = Process()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-tls-\(UUID().uuidString)")
        private(set) var port = 0

        init() throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let certificate = directory.appendingPathComponent("cert.pem").path
            let key = directory.appendingPathComponent("key.pem").path
            let request = Process()
            request.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            request.arguments = [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", certificate,
                "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ]
            request.standardError = FileHandle.nullDevice
            try request.run()
            request.waitUntilExit()
            guard request.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }

            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-www"]
            process.standardOutput = output
            process.standardInput = FileHandle.nullDevice
            process.standardError = output
            try process.run()
            // "ACCEPT 127.0.0.1:PORT" once it listens.
            var text = ""
            func listening() -> Bool {
                text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains { $0.hasPrefix("ACCEPT ") }
            }
            while !listening() {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
                let port = Int(line.split(separator: ":").last ?? "")
            else {
                stop()
                Issue.record("openssl s_server did not say where it listens: \(text)")
                throw CocoaError(.fileReadUnknown)
            }
            self.port = port
        }

        func stop() {
            // s_server does not end on SIGTERM while it waits for a connection.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test("Without DevelopmentTransport, a self-signed certificate gives an SIWAError whose sentence names the fix")
    func untrusted() async throws {
        let server = try SelfSignedServer()
        defer { server.stop() }
        let client = SIWAClient(baseURL: URL(string: "https://localhost:\(server.port)/")!, storage: MemoryStorage())
        let credential = AppleSignInCredential(identityToken: "h.p.s", authorizationCode: "code", user: "001.abc.1")
        let error = await #expect(throws: SIWAError.self) { try await client.signIn(with: credential, nonce: SignInNonce()) }
        let message = try #require(error).description
        print(message)
        #expect(!message.contains("NSURLErrorDomain") && !message.contains("Error Domain"), "\(message)")
        #expect(
            message.contains("certificate is not trusted") && message.contains("DevelopmentTransport(trustingCertificateAt:)"), "\(message)"
        )
        #expect(try #require(error).localizedDescription == message)
    }
}
