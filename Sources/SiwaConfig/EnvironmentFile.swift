import Foundation

/// The `KEY=value` lines of /etc/siwa/siwa.env as systemd's `EnvironmentFile=` reads them, so that a
/// command run by hand sees the configuration the units see: blank lines and lines starting with `#`
/// or `;` are skipped, white space around the key and the value is dropped, and a value wholly in
/// double or single quotes loses its quotes.
package enum EnvironmentFile {
    package static func parse(_ text: String) -> [(name: String, value: String)] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let line = line.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#"), !line.hasPrefix(";"), let equals = line.firstIndex(of: "=") else { return nil }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            return name.isEmpty ? nil : (name, value)
        }
    }
}
