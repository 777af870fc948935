import Foundation
import WebForms

/// Where Apple's form post for an app is sent on: the app that opened Apple's web authorization in
/// a browser tab (an Android or Flutter app) with `SIWA_PUBLIC_URL/auth/app-callback/NAME` as its
/// Return URL. The target is the configuration's (`SIWA_APPLE_APP_CALLBACKS`), never the request's.
package enum AppCallbackTarget: Sendable, Equatable, CustomStringConvertible {
    /// `intent://callback?FIELDS#Intent;package=PACKAGE;scheme=signinwithapple;end`: the Android
    /// intent the `sign_in_with_apple` Flutter plugin waits for, opened in that package only.
    case androidIntent(package: String)
    /// An Android App Link (`https://...`) or a custom scheme (`com.example.app:/apple`), the
    /// fields added to its query.
    case url(String)

    /// Parses the configured form: `intent:PACKAGE`, `https://host/path`, or `scheme:/path`.
    /// - Returns: nil for anything else (a package that is not a Java package name, a URL with a
    ///   fragment or without a host, a refused scheme).
    package init?(configured value: String) {
        if value.hasPrefix("intent:") {
            let package = String(value.dropFirst("intent:".count))
            let segment = #"[A-Za-z][A-Za-z0-9_]*"#
            guard package.range(of: "^\(segment)(\\.\(segment))+$", options: .regularExpression) != nil else { return nil }
            self = .androidIntent(package: package)
            return
        }
        // Not the web's http: an App Link is https, anything else a custom scheme.
        guard let scheme = AppURIs.scheme(of: value), scheme != "http", scheme != "https" || AppURIs.hasHost(value) else { return nil }
        self = .url(value)
    }

    /// The redirect that carries `fields` (already chosen) to the app.
    package func location(carrying fields: [(String, String)]) -> String {
        switch self {
        case .androidIntent(let package):
            return AppURIs.adding(fields, to: "intent://callback") + "#Intent;package=\(package);scheme=signinwithapple;end"
        case .url(let url):
            return AppURIs.adding(fields, to: url)
        }
    }

    package var description: String {
        switch self {
        case .androidIntent(let package): "intent:\(package)"
        case .url(let url): url
        }
    }
}

extension SignInUseCases {
    /// The fields of Apple's form post an app gets, in the order Apple sent them, with the most
    /// bytes each may have: the code, the identity token, the app's `state`, the first
    /// authorization's `user` JSON, or Apple's `error`. Each is a few times what Apple sends (a code
    /// of about 100 characters, an identity token of about 1,000), so that the redirect that
    /// carries them stays far below the 32 KiB header buffer `nginx/siwa-locations.conf` gives
    /// siwa's answers: under 12 KB with every field at its limit, `state` and `user` (any text)
    /// percent-encoded at three bytes for each of theirs, the others URL-safe as Apple's are.
    package static let relayedFields: [String: Int] = [
        "code": 1024, "id_token": 3072, "state": 512, "user": 2048, "error": 64,
    ]

    /// What relaying Apple's form post to an app leads to.
    package enum AppCallbackRelay: Sendable, Equatable {
        /// The redirect to the app's configured target with Apple's fields.
        case redirect(String)
        /// No app of that name is configured.
        case unknownApp
        /// The form is not Apple's answer; the reason, which never repeats the form's values.
        case refused(String)
    }

    /// Relays Apple's form post for the app `name` to it: the redirect to its configured target with
    /// Apple's fields, unchanged. The form must be Apple's answer: a `code` and an `id_token`, or an
    /// `error`, with `state` and `user` optional, each at most once and within its size
    /// (`relayedFields`), the code, the token and the error URL-safe as Apple's are; other fields
    /// are dropped. Nothing is verified or stored here: the app signs in with them through
    /// `POST /auth/apple`, which checks everything.
    package func relayAppCallback(app name: String, form: [(String, String)]) throws -> AppCallbackRelay {
        guard let target = try requireApple().settings.appCallbacks[name] else { return .unknownApp }
        guard let seen = FormEncoding.distinct(form, among: Set(Self.relayedFields.keys)) else {
            return .refused("Apple's answer repeats a field.")
        }
        for (name, value) in seen {
            guard value.utf8.count <= Self.relayedFields[name, default: 0] else {
                return .refused("Apple's answer has a field longer than Apple sends.")
            }
            guard ["state", "user"].contains(name) || value.utf8.allSatisfy(Self.isURLSafe) else {
                return .refused("Apple's answer has a code, identity token or error that is not one of Apple's.")
            }
        }
        let signedIn = !(seen["code"] ?? "").isEmpty && !(seen["id_token"] ?? "").isEmpty
        guard signedIn || !(seen["error"] ?? "").isEmpty else {
            return .refused("Apple's answer has neither a code with an identity token nor an error.")
        }
        return .redirect(target.location(carrying: form.filter { seen[$0.0] != nil }))
    }

    /// Base64url's alphabet and `.`: the characters of Apple's codes, identity tokens and error codes.
    private static func isURLSafe(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
