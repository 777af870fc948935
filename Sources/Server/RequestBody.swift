package import FastCGI
import Foundation

extension Request {
    /// Decodes the JSON body as `T`.
    /// - Throws: 415 for another content type, 400 naming the first problem.
    package func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        try requireJSON()
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch DecodingError.keyNotFound(let key, let context) {
            throw HTTPError.badRequest("`\(Request.path(context.codingPath + [key]))` is required")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            throw HTTPError.badRequest("`\(Request.path(context.codingPath))` has the wrong type")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            throw HTTPError.badRequest("`\(Request.path(context.codingPath))` is out of range")
        } catch {
            throw HTTPError.badRequest("The body is not a JSON object")
        }
    }

    /// - Throws: 415 when the body is declared as anything but JSON.
    package func requireJSON() throws {
        if let contentType = headers["content-type"], !contentType.lowercased().hasPrefix("application/json") {
            throw HTTPError(415, "unsupported_media_type", "Send the body as application/json")
        }
    }

    /// A coding path as a client writes it: `progress[3].status`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text
    }
}

/// Length limits on client input: every string a client sends has one.
/// - Throws: 400 naming the member when `value` is longer than `maximum` bytes of UTF-8.
package func limited(_ value: String?, _ name: String, maximum: Int) throws -> String? {
    guard let value else { return nil }
    guard value.utf8.count <= maximum else { throw HTTPError.badRequest("`\(name)` is longer than \(maximum) bytes") }
    return value
}
