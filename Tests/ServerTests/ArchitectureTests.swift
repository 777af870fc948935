import Foundation
import Testing

/// docs/ARCHITECTURE.md's table of what each module imports is the sources' own `import` lines, and
/// its order is the layers': a module imports only modules of rows above its own.
@Suite struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Modules of the system and the toolchain, which the table leaves out.
    static let system: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin", "Dispatch", "Synchronization",
        "Combine", "CryptoKit", "Observation", "Security", "AuthenticationServices", "Testing",
    ]

    /// Edges the layers keep out whatever the order allows.
    static let forbidden: [String: Set<String>] = [
        "Identity": ["FastCGI", "Server", "SiwaConfig"],
        "Server": ["Accounts", "MariaDB", "HTTPClient"],
        "SIWAKit": [
            "Accounts", "AccountData", "AppleID", "FastCGI", "Identity", "JOSE", "MariaDB", "Server", "SiwaConfig", "Telemetry", "Threads",
        ],
    ]

    /// The modules each target of `Sources/` imports, but the system's.
    static func imports() throws -> [String: Set<String>] {
        let sources = root.appendingPathComponent("Sources")
        let line =
            #/^\s*(?:@_exported\s+|@testable\s+)?(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(?:(?:struct|class|enum|func|protocol|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)/#
        var modules: [String: Set<String>] = [:]
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() where !module.hasPrefix(".") {
            var imported = Set<String>()
            let directory = sources.appendingPathComponent(module)
            let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for text in text.split(separator: "\n") {
                    if let match = try line.firstMatch(in: String(text)), !system.contains(String(match.1)) {
                        imported.insert(String(match.1))
                    }
                }
            }
            modules[module] = imported
        }
        return modules
    }

    /// The rows of the table under "### What each module imports": module and imports, in order.
    static func documented() throws -> [(module: String, imports: Set<String>)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        guard let start = text.range(of: "### What each module imports") else { return [] }
        var rows: [(String, Set<String>)] = []
        for line in text[start.upperBound...].split(separator: "\n").drop(while: { !$0.hasPrefix("|") }) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, cells[1].hasPrefix("`") else { continue }
            let names = { (cell: String) in
                Set(
                    cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map {
                        String($0.element)
                    })
            }
            rows.append((names(cells[1]).first ?? "", names(cells[2])))
        }
        return rows
    }

    @Test("docs/ARCHITECTURE.md lists each module's imports as its sources have them, in an order where each imports only modules above it")
    func importsTable() throws {
        let actual = try Self.imports()
        let rows = try Self.documented()
        #expect(rows.count > 20, "the table under \"### What each module imports\" in docs/ARCHITECTURE.md")
        var above = Set<String>()
        for (module, imports) in rows {
            #expect(actual[module] == imports, "\(module) imports \((actual[module] ?? []).sorted()), the table says \(imports.sorted())")
            let local = imports.filter { actual[$0] != nil }
            #expect(local.isSubset(of: above), "\(module) imports \(local.subtracting(above).sorted()), which the table lists below it")
            above.insert(module)
        }
        for (module, forbidden) in Self.forbidden {
            let found = (actual[module] ?? []).intersection(forbidden)
            #expect(found.isEmpty, "\(module) must not import \(found.sorted())")
        }
        let missing = Set(actual.keys).subtracting(rows.map(\.module))
        #expect(missing.isEmpty, "modules the table does not list: \(missing.sorted())")
        if actual.contains(where: { module, imports in !rows.contains { $0.module == module && $0.imports == imports } }) {
            print("Imports as the sources have them:")
            for (module, imports) in actual.sorted(by: { $0.key < $1.key }) {
                print("| `\(module)` | \(imports.sorted().map { "`\($0)`" }.joined(separator: ", ")) |")
            }
        }
    }
}
