package import FastCGI
import Foundation
import JOSE
package import StrictJSON
import WebForms

extension Request {
    /// Decodes the JSON body as `T`. The body is first read by the strict reader of the token
    /// checks (RFC 8259 only, no duplicate member, valid UTF-8, no lone surrogate, no BOM), which
    /// Foundation's decoder is not, within the shape of `limits` (the route's, `RouteContext.bodyLimits`).
    /// - Throws: 415 for another content type, 400 naming the first problem.
    package func decodeJSON<T: Decodable>(_ type: T.Type, limits: BodyLimits) throws -> T {
        try requireJSON()
        do {
            _ = try JSONObject(parsing: body, limits: limits.json)
        } catch {
            throw HTTPError.badRequest("The body is not a strict JSON object: \(error)")
        }
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

    /// The JSON body as a strict JSON object (the first pass of `decodeJSON`), for routes that read
    /// their few members from it directly: Foundation's `JSONDecoder`, a second pass over the same
    /// bytes, was about 4 % of siwa's CPU in a sign-in and in a refresh (docs/PERFORMANCE.md).
    /// - Throws: 415 for another content type, 400 naming the first problem.
    package func jsonObject(limits: BodyLimits) throws -> JSONObject {
        try requireJSON()
        do {
            return try JSONObject(parsing: body, limits: limits.json)
        } catch {
            throw HTTPError.badRequest("The body is not a strict JSON object: \(error)")
        }
    }

    /// - Throws: 415 when the body is declared as anything but JSON.
    package func requireJSON() throws {
        // What every client sends, compared before the media type is parsed.
        if let contentType = headers["content-type"], contentType != "application/json",
            MediaType(contentType)?.essence != "application/json"
        {
            throw HTTPError(415, "unsupported_media_type", "Send the body as application/json")
        }
    }

    /// - Throws: 415 with `message` unless the body is declared as
    ///   `application/x-www-form-urlencoded`.
    package func requireForm(_ message: String) throws {
        guard let contentType = headers["content-type"], MediaType(contentType)?.essence == "application/x-www-form-urlencoded" else {
            throw HTTPError(415, "unsupported_media_type", message)
        }
    }

    /// The fields of the query string (form encoding); nil when it is malformed.
    package var queryFields: [(String, String)]? { FormEncoding.fields(query) }

    /// A coding path as a client writes it: `progress[3].status`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text
    }
}

/// The string member `name` of a request body's `object`, as `JSONDecoder` reads a `String?`
/// property: nil when absent or `null`.
/// - Parameter path: where the object is in the body (`fullName`), for the error.
/// - Throws: 400 "`path.name` has the wrong type" for another kind of value.
package func optionalString(_ object: JSONObject, _ name: String, in path: String? = nil) throws -> String? {
    switch object.kind(of: name) {
    case nil, .null?: return nil
    case .string?:
        if let value = try? object.string(name) { return value }
    default: break
    }
    throw HTTPError.badRequest("`\(path.map { $0 + "." } ?? "")\(name)` has the wrong type")
}

/// The string member `name` of a request body's `object`, as `JSONDecoder` reads a `String`
/// property.
/// - Throws: 400 "`name` is required" when absent, "has the wrong type" for `null` or another kind.
package func requiredString(_ object: JSONObject, _ name: String) throws -> String {
    guard object.contains(name) else { throw HTTPError.badRequest("`\(name)` is required") }
    guard let value = try optionalString(object, name) else { throw HTTPError.badRequest("`\(name)` has the wrong type") }
    return value
}

/// Length limits on client input: every string a client sends has one. Counted in code points, as
/// JSON Schema's `maxLength` in docs/openapi.yaml counts (so at most 4 bytes of UTF-8 each).
/// - Throws: 400 naming the member when `value` is longer than `maximum` code points.
package func limited(_ value: String?, _ name: String, maximum: Int) throws -> String? {
    guard let value else { return nil }
    guard value.utf8.count <= maximum || value.unicodeScalars.count <= maximum else {
        throw HTTPError.badRequest("`\(name)` is longer than \(maximum) characters")
    }
    return value
}
