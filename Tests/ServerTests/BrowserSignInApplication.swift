import FastCGI
import Foundation
import Identity
import JOSE
import Logging
import Server
import SiwaConfig

/// The application configured for the sign-ins in a browser (Apple, sessions, an Android app's
/// callback, a native app's client) with a database that cannot be reached: what the browser
/// routes answer before they need the database.
final class BrowserSignInApplication {
    /// `SIWA_APPLE_APP_CALLBACKS`: a Flutter app's intent and an App Link.
    static let appCallbacks = "flutter=intent:com.example.flutter,links=https://app.example.com/apple?from=siwa"
    /// `SIWA_APP_CLIENTS`: a desktop app with a loopback redirect URI.
    static let appClient = (id: "desktop", redirectURI: "http://127.0.0.1/callback")

    let application: Application
    let worker: Worker
    private let directory: String

    /// - Parameter settings: more `SIWA_*` keys, or other values of these.
    init(_ settings: [String: String] = [:]) throws {
        directory = NSTemporaryDirectory() + "siwa-browser-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/access", withIntermediateDirectories: true)
        _ = try AccessTokenKeyFiles.add(.es256, to: directory + "/access", now: Date())
        try Self.write(try P256PrivateKey().pem(), to: directory + "/apple.p8")
        try Self.write("k1 \(Data((0..<32).map { UInt8($0) }).base64EncodedString())\n", to: directory + "/data_keys")
        let environment = [
            "SIWA_DB_SOCKET": "/nonexistent/siwa-test.sock", "SIWA_DB_NAME": "unused", "SIWA_DB_USER": "unused",
            "SIWA_APPLE_TEAM_ID": "TEAMID1234", "SIWA_APPLE_KEY_ID": "KEYID12345", "SIWA_APPLE_PRIVATE_KEY_FILE": directory + "/apple.p8",
            "SIWA_APPLE_BUNDLE_IDS": "com.example.app", "SIWA_APPLE_SERVICES_ID": "com.example.web",
            "SIWA_APPLE_BASE_URL": "http://127.0.0.1:1", "SIWA_APPLE_APP_CALLBACKS": Self.appCallbacks,
            "SIWA_APP_CLIENTS": "\(Self.appClient.id)=\(Self.appClient.redirectURI)",
            "SIWA_PUBLIC_URL": "https://auth.example.com", "SIWA_ACCESS_KEYS_DIR": directory + "/access",
            "SIWA_DATA_KEYS_FILE": directory + "/data_keys",
        ].merging(settings) { $1 }
        application = Application(config: try AppConfig(environment: environment), logger: Logger(label: "browser-tests"))
        worker = application.makeWorker(index: 0)
    }

    deinit {
        worker.close()
        application.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `method path?query` with `body` of `contentType` (none when nil) and `more` headers, through the worker.
    func respond(
        _ method: String, _ path: String, query: String = "", contentType: String? = nil, body: String = "",
        headers more: [(String, String)] = []
    ) -> Response {
        let headers = HTTPHeaders((contentType.map { [("Content-Type", $0)] } ?? []) + more)
        return worker.respond(to: Request(method: method, path: path, query: query, headers: headers, body: Array(body.utf8)))
    }

    private static func write(_ text: String, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
    }
}

extension Response {
    /// The values of the header `name`.
    func values(of name: String) -> [String] { headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }

    /// Whether this is the styled page a browser is shown, with `status`, and neither a redirect nor
    /// any of `refused` (the values a refused request sent) in its headers or its page.
    func isPage(_ status: Int, without refused: [String] = []) -> Bool {
        let page = String(decoding: body, as: UTF8.self)
        return self.status == status && contentType.hasPrefix("text/html") && page.contains(#"<link rel="stylesheet" href="/app.css">"#)
            && values(of: "Location").isEmpty
            && !refused.contains { value in page.contains(value) || headers.contains { $0.value.contains(value) } }
    }
}
