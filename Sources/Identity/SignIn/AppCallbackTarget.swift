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
