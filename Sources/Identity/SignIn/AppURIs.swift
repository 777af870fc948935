import Foundation
import WebForms

/// What the addresses an app is sent back to share: the app callback's targets
/// (`AppCallbackTarget`) and the redirect URIs of the browser sign-in (`AppRedirectURI`).
enum AppURIs {
    /// The schemes an app's address may not have: those a browser runs or resolves itself.
    static let refusedSchemes: Set<String> = ["javascript", "data", "file", "blob", "vbscript", "about", "intent", "content"]

    /// The lowercased scheme of `value`, when `value` is printable ASCII without a fragment and its
    /// scheme is well-formed and not refused; nil otherwise.
    static func scheme(of value: String) -> String? {
        guard !value.contains("#"), value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
            let colon = value.firstIndex(of: ":")
        else { return nil }
        let scheme = value[..<colon].lowercased()
        guard scheme.range(of: "^[a-z][a-z0-9+.-]*$", options: .regularExpression) != nil, !refusedSchemes.contains(scheme) else {
            return nil
        }
        return scheme
    }

    /// Whether an https `value` names a host.
    static func hasHost(_ value: String) -> Bool { !(URL(string: value)?.host ?? "").isEmpty }

    /// `uri` with `fields` added to its query, form-encoded.
    static func adding(_ fields: [(String, String)], to uri: String) -> String {
        let query = fields.map { "\(FormEncoding.encode($0.0))=\(FormEncoding.encode($0.1))" }.joined(separator: "&")
        return uri + (uri.contains("?") ? "&" : "?") + query
    }
}
