import Foundation

/// A minimal reader of nginx/siwa-locations.conf: its locations with their directives, the
/// server level's body size, and the `if ($variable ~ "pattern") { set $name value; }` rules of
/// its error location. It reads what the file writes, one directive a line; it is no nginx parser.
struct NginxSite {
    /// A `location` block.
    struct Location {
        /// `=`, `^~`, `@` (a named location) or empty (a prefix).
        var modifier: String
        /// The location's path, or its name (`@name`).
        var path: String
        /// The block's lines, trimmed, comments left out.
        var lines: [String] = []

        /// `location = /health`, as the file writes it.
        var name: String { "location " + (modifier.isEmpty || modifier == "@" ? "" : modifier + " ") + path }
        /// Whether only nginx's own redirects reach it (`internal;`, or a named location).
        var isInternal: Bool { modifier == "@" || lines.contains("internal;") }
        /// Whether it passes requests to siwa.
        var passesToSiwa: Bool { lines.contains("fastcgi_pass siwa_app;") }

        /// The value of `directive` in the block, without its `;` and quotes.
        func value(of directive: String) -> String? {
            lines.last { $0.hasPrefix(directive + " ") }.map { NginxSite.value($0, after: directive) }
        }
    }

    /// `if ($variable ~ "pattern") { set $name value; }`.
    struct Rule {
        var variable: String
        var pattern: String
        var name: String
        var value: String

        /// Whether the pattern matches `text` (nginx's PCRE patterns; these need nothing ICU lacks).
        func matches(_ text: String) throws -> Bool {
            try NSRegularExpression(pattern: pattern).firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
    }

    /// The server level's `client_max_body_size`, in bytes.
    var bodySize: Int?
    var locations: [Location] = []
    /// The rules of every location, in the file's order.
    var rules: [Rule] = []

    init(_ text: String) throws {
        var depth = 0
        var location: Location?
        var condition: (variable: String, pattern: String)?
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if depth == 0, line.hasPrefix("location ") {
                let words = line.dropLast().split(separator: " ").map(String.init)
                if words.count == 3 {
                    location = Location(modifier: words[1], path: words[2])
                } else if words[1].hasPrefix("@") {
                    location = Location(modifier: "@", path: words[1])
                } else {
                    location = Location(modifier: "", path: words[1])
                }
            } else if depth == 0, line.hasPrefix("client_max_body_size ") {
                bodySize = NginxSite.bytes(NginxSite.value(line, after: "client_max_body_size"))
            } else if depth == 1, line.hasPrefix("if ("), let tilde = line.range(of: " ~ \"") {
                let variable = String(line[line.index(line.startIndex, offsetBy: 4)..<tilde.lowerBound])
                let pattern = line[tilde.upperBound...].dropLast(#"") {"#.count)
                condition = (variable, String(pattern))
            } else if depth == 2, let condition, line.hasPrefix("set ") {
                let words = line.split(separator: " ", maxSplits: 2).map(String.init)
                rules.append(
                    Rule(
                        variable: condition.variable, pattern: condition.pattern, name: words[1],
                        value: NginxSite.value(line, after: "set " + words[1])))
            } else if depth == 1 {
                location?.lines.append(line)
            }
            let unquoted = line.split(separator: "\"", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 0 }.map(
                \.element
            ).joined()
            depth += unquoted.filter { $0 == "{" }.count - unquoted.filter { $0 == "}" }.count
            if depth == 0, let finished = location {
                locations.append(finished)
                location = nil
            }
            if depth < 2 { condition = nil }
        }
    }

    /// The location nginx chooses for a client's request to `path`: an exact one, else the longest
    /// prefix (the file has no regular-expression location).
    func location(for path: String) -> Location? {
        let reachable = locations.filter { !$0.isInternal }
        if let exact = reachable.first(where: { $0.modifier == "=" && $0.path == path }) { return exact }
        return reachable.filter { ["", "^~"].contains($0.modifier) && path.hasPrefix($0.path) }.max { $0.path.count < $1.path.count }
    }

    /// The largest body the location accepts, in bytes: its own `client_max_body_size` or the
    /// server level's.
    func bodySize(of location: Location) -> Int? {
        location.value(of: "client_max_body_size").flatMap(NginxSite.bytes) ?? bodySize
    }

    /// The value the rules on `variable` give `name` for `text`: the last that matches; nil when none does.
    func value(of name: String, testing variable: String, against text: String) throws -> String? {
        try rules.filter { $0.variable == variable && $0.name == name }.last { try $0.matches(text) }?.value
    }

    /// `32k`, `1m` or a number of bytes; `0` (no limit) as `Int.max`.
    static func bytes(_ size: String) -> Int? {
        let unit = ["k": 1024, "m": 1024 * 1024][size.last.map(String.init)?.lowercased() ?? ""]
        guard let number = Int(unit == nil ? size : String(size.dropLast())) else { return nil }
        return number == 0 ? .max : number * (unit ?? 1)
    }

    /// The value of `line`, `directive value;`, without the `;` and the quotes.
    static func value(_ line: String, after directive: String) -> String {
        var value = line.dropFirst(directive.count).trimmingCharacters(in: .whitespaces)
        if value.hasSuffix(";") { value.removeLast() }
        if value.count >= 2, let first = value.first, first == value.last, first == "\"" || first == "'" {
            value = String(value.dropFirst().dropLast())
        }
        return value
    }
}
