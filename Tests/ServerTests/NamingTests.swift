import Foundation
import Testing

/// A maintainer finds a behaviour by its file's name (docs/ARCHITECTURE.md, "Files named after what
/// they hold"): each file of `Sources/` is named after the main type it declares, or is
/// `Type+Feature.swift` and extends `Type`; a command of the command line is in the file of its
/// type; no type is declared and extended in more than three files.
@Suite struct NamingTests {
    /// The most files a type may be declared and extended in.
    static let filesPerType = 3

    /// A declaration of a type, or an extension, at the top level of a file or directly inside a
    /// top-level one.
    struct Declaration: Equatable, CustomStringConvertible {
        /// `struct`, `class`, `enum`, `protocol`, `actor`, `typealias` or `extension`.
        let kind: String
        /// The name as written: `Route.Access` for `extension Route.Access`.
        let name: String
        /// What follows the name on its line: generic parameters, inherited types, `where`.
        let clause: String
        /// For a nested declaration, the top-level declaration it is in.
        let enclosing: String?
        /// For a nested declaration, whether the top-level declaration it is in is an extension.
        let inExtension: Bool

        init(_ kind: String, _ name: String, clause: String = "", enclosing: String? = nil, inExtension: Bool = false) {
            self.kind = kind
            self.name = name
            self.clause = clause
            self.enclosing = enclosing
            self.inExtension = inExtension
        }

        /// The type's full name: its enclosing declaration's name and its own.
        var qualifiedName: String { enclosing.map { "\($0).\(name)" } ?? name }

        var description: String { "\(kind) \(qualifiedName)" }
    }

    /// The code of a Swift file without its comments and without the text of its string and regex
    /// literals (interpolations are kept), so that their braces and keywords are not read as code.
    static func code(of text: String) -> String {
        var lexer = Lexer(scalars: Array(text.unicodeScalars))
        lexer.code(inInterpolation: false)
        var view = String.UnicodeScalarView()
        view.append(contentsOf: lexer.output)
        return String(view)
    }

    /// Reads Swift's comments and literals well enough to set them aside.
    struct Lexer {
        let scalars: [Unicode.Scalar]
        var index = 0
        var output: [Unicode.Scalar] = []

        func peek(_ offset: Int = 0) -> Unicode.Scalar? { index + offset < scalars.count ? scalars[index + offset] : nil }

        /// Code up to the end, or up to the `)` that closes an interpolation.
        mutating func code(inInterpolation: Bool) {
            var parentheses = 0
            while let scalar = peek() {
                if scalar == "/", peek(1) == "/" {
                    while let next = peek(), next != "\n" { index += 1 }
                    continue
                }
                if scalar == "/", peek(1) == "*" {
                    blockComment()
                    continue
                }
                if scalar == "#" || scalar == "\"" {
                    var hashes = 0
                    while peek(hashes) == "#" { hashes += 1 }
                    if peek(hashes) == "\"" {
                        index += hashes
                        string(hashes: hashes)
                        continue
                    }
                    if hashes > 0, peek(hashes) == "/" {
                        index += hashes + 1
                        regex(hashes: hashes)
                        continue
                    }
                }
                if inInterpolation, scalar == "(" { parentheses += 1 }
                if inInterpolation, scalar == ")" {
                    if parentheses == 0 {
                        index += 1
                        return
                    }
                    parentheses -= 1
                }
                output.append(scalar)
                index += 1
            }
        }

        /// A `/* */` comment, which may hold others; its line breaks are kept.
        mutating func blockComment() {
            index += 2
            var depth = 1
            while depth > 0, let scalar = peek() {
                if scalar == "/", peek(1) == "*" {
                    depth += 1
                    index += 2
                } else if scalar == "*", peek(1) == "/" {
                    depth -= 1
                    index += 2
                } else {
                    if scalar == "\n" { output.append(scalar) }
                    index += 1
                }
            }
        }

        /// A string literal from its opening quote, with `hashes` `#` around it: written as `""`.
        mutating func string(hashes: Int) {
            let quotes = peek(1) == "\"" && peek(2) == "\"" ? 3 : 1
            index += quotes
            output.append("\"")
            while let scalar = peek() {
                if scalar == "\\" {
                    var length = 1
                    while length <= hashes, peek(length) == "#" { length += 1 }
                    if length == hashes + 1 {
                        let interpolation = peek(length) == "("
                        index += length + 1
                        if interpolation { code(inInterpolation: true) }
                        continue
                    }
                }
                if scalar == "\"", (0..<quotes).allSatisfy({ peek($0) == "\"" }), (0..<hashes).allSatisfy({ peek(quotes + $0) == "#" }) {
                    index += quotes + hashes
                    output.append("\"")
                    return
                }
                if scalar == "\n" { output.append(scalar) }
                index += 1
            }
        }

        /// A `#/ /#` regex literal, after its opening `/`.
        mutating func regex(hashes: Int) {
            while let scalar = peek() {
                if scalar == "/", (0..<hashes).allSatisfy({ peek(1 + $0) == "#" }) {
                    index += 1 + hashes
                    return
                }
                index += 1
            }
        }
    }

    /// A line that begins a declaration of a type or an extension: attributes and modifiers, the
    /// kind, the name, and what follows.
    static var declaration: Regex<(Substring, Substring, Substring, Substring)> {
        #/
        ^ \s* (?: @ [A-Za-z_][A-Za-z0-9_.]* (?: \( [^)]* \) )? \s+ )*
        (?: (?: public | package | internal | private | fileprivate | open | final | indirect | nonisolated ) (?: \(set\) )? \s+ )*
        ( struct | class | enum | protocol | actor | extension | typealias ) \s+
        (?! (?: func | var | let | subscript | init | deinit | case ) \b )
        ( [A-Za-z_][A-Za-z0-9_]* (?: \. [A-Za-z_][A-Za-z0-9_]* )* )
        ( .* ) $
        /#
    }

    /// The declarations of types and extensions in `text`, at its top level and directly inside a
    /// top-level declaration (nested ones carry its name).
    static func declarations(in text: String) -> [Declaration] {
        var found: [Declaration] = []
        var depth = 0
        var top: Declaration?
        let pattern = Self.declaration
        let kinds = ["struct", "class", "enum", "protocol", "actor", "extension", "typealias"]
        for line in code(of: text).split(separator: "\n", omittingEmptySubsequences: false) {
            if depth <= 1, kinds.contains(where: { line.contains($0) }), let match = try? pattern.firstMatch(in: String(line)) {
                let (kind, name, clause) = (String(match.1), String(match.2), String(match.3))
                if depth == 0 {
                    let declaration = Declaration(kind, name, clause: clause)
                    top = declaration
                    found.append(declaration)
                } else if let top {
                    found.append(Declaration(kind, name, clause: clause, enclosing: top.name, inExtension: top.kind == "extension"))
                }
            }
            let before = depth
            depth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
            if before > 0, depth == 0 { top = nil }
        }
        return found
    }

    /// The type a file's name says it holds: `Emulator` for `Emulator+AdminAPI.swift`.
    static func namedType(of path: String) -> String {
        let file = path.split(separator: "/").last ?? ""
        return String(file.dropLast(".swift".count).prefix { $0 != "+" })
    }

    /// Whether a file of these declarations declares or extends the type its name says: at its top
    /// level, or as a type nested in an extension of its parent; an extension of a nested type
    /// (`extension Route.Access`) counts for the nested type.
    static func isNamedAfterItsType(_ path: String, _ declarations: [Declaration]) -> Bool {
        let type = namedType(of: path)
        return declarations.contains { declaration in
            if declaration.enclosing != nil {
                return declaration.inExtension && declaration.name == type && declaration.kind != "extension"
            }
            return declaration.name == type
                || (declaration.kind == "extension" && declaration.name.split(separator: ".").last.map(String.init) == type)
        }
    }

    /// Top-level commands of the command line (`ParsableCommand`) declared in a file not named after them.
    static func misplacedCommands(_ path: String, _ declarations: [Declaration]) -> [String] {
        declarations.filter { $0.enclosing == nil && $0.kind != "extension" && $0.clause.contains("ParsableCommand") }.map(\.name)
            .filter { $0 != namedType(of: path) }
    }

    /// The files of `Sources/`, relative to the root, with their declarations.
    static func sources() throws -> [(path: String, declarations: [Declaration])] {
        let root = ArchitectureTests.root
        let files = FileManager.default.enumerator(atPath: root.appendingPathComponent("Sources").path)?.compactMap { $0 as? String } ?? []
        let paths = files.filter { $0.hasSuffix(".swift") }.map { "Sources/" + $0 }
        return try paths.sorted().map { path in
            (path, declarations(in: try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)))
        }
    }

    /// The rows of the table under "### Files named after what they hold" in docs/ARCHITECTURE.md:
    /// each file named otherwise, and why.
    static func exceptions() throws -> [String: String] {
        let text = try String(contentsOf: ArchitectureTests.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        guard let start = text.range(of: "### Files named after what they hold") else { return [:] }
        var rows: [String: String] = [:]
        for line in text[start.upperBound...].split(separator: "\n").drop(while: { !$0.hasPrefix("|") }) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, cells[1].hasPrefix("`Sources/") else { continue }
            rows[String(cells[1].dropFirst().prefix { $0 != "`" })] = cells[2]
        }
        return rows
    }

    @Test("Types and extensions are read with their attributes, modifiers and generic parameters, not from comments and strings")
    func declarationsAreRead() {
        let text = #"""
            package import FastCGI

            /// struct InComment {}
            @MainActor public final class Model<Value: Sendable>: Sendable where Value: Equatable {
                private struct Nested {}
                class var shared: Model<Int> { fatalError() }
                let text = "} struct InString { \(["a": "}"].count) }"
                let raw = #"extension InRawString { "# + """
                    enum InMultilineString {
                    """
                func method() { if true { struct Local {} } }
            }
            /* class InBlockComment { /* nested */ } */
            extension Request {
                enum Nested {}
            }
            #if canImport(Foundation)
                fileprivate extension Route.Access: CustomStringConvertible {}
            #endif
            package typealias Handler = (Request) -> Response
            indirect enum Tree { case leaf }
            extension Array: Sendable
            where Element: Sendable {
                struct Chunk {}
            }
            """#
        #expect(
            Self.declarations(in: text) == [
                Declaration("class", "Model", clause: "<Value: Sendable>: Sendable where Value: Equatable {"),
                Declaration("struct", "Nested", clause: " {}", enclosing: "Model"),
                Declaration("extension", "Request", clause: " {"),
                Declaration("enum", "Nested", clause: " {}", enclosing: "Request", inExtension: true),
                Declaration("extension", "Route.Access", clause: ": CustomStringConvertible {}"),
                Declaration("typealias", "Handler", clause: " = (Request) -> Response"),
                Declaration("enum", "Tree", clause: " { case leaf }"),
                Declaration("extension", "Array", clause: ": Sendable"),
                Declaration("struct", "Chunk", clause: " {}", enclosing: "Array", inExtension: true),
            ])
    }

    @Test("A file is named after a type it declares or extends at its top level, or a type it nests in an extension of the type's parent")
    func namingRule() {
        let model = [Declaration("class", "Model"), Declaration("struct", "Nested", enclosing: "Model")]
        #expect(Self.isNamedAfterItsType("Sources/A/Model.swift", model))
        #expect(!Self.isNamedAfterItsType("Sources/A/Nested.swift", model))
        #expect(!Self.isNamedAfterItsType("Sources/A/Models.swift", model))
        let extended = [Declaration("extension", "Emulator"), Declaration("struct", "Grant", enclosing: "Emulator", inExtension: true)]
        #expect(Self.isNamedAfterItsType("Sources/A/Emulator+Admin.swift", extended))
        #expect(Self.isNamedAfterItsType("Sources/A/Grant.swift", extended))
        #expect(!Self.isNamedAfterItsType("Sources/A/Admin.swift", extended))
        #expect(Self.isNamedAfterItsType("Sources/A/Access.swift", [Declaration("extension", "Route.Access")]))
        #expect(!Self.isNamedAfterItsType("Sources/A/Polling.swift", []))
        let commands = [
            Declaration("struct", "Verify", clause: ": ParsableCommand {"), Declaration("struct", "Secret", clause: ": ParsableCommand {"),
        ]
        #expect(Self.misplacedCommands("Sources/siwa/Verify.swift", commands) == ["Secret"])
    }

    @Test("Each file of Sources/ is named after a type it declares or extends, and a command's file after the command")
    func filesAreNamedAfterTheirTypes() throws {
        let exceptions = try Self.exceptions()
        for (path, declarations) in try Self.sources() {
            guard !path.hasSuffix("/main.swift") else { continue }
            let commands = Self.misplacedCommands(path, declarations)
            #expect(
                commands.isEmpty, "\(path) holds the command \(commands.joined(separator: ", ")): each command goes in the file of its type"
            )
            guard exceptions[path] == nil else { continue }
            let holds = declarations.filter { $0.enclosing == nil }.map(\.description).joined(separator: ", ")
            #expect(
                Self.isNamedAfterItsType(path, declarations),
                """
                \(path) declares or extends no type \(Self.namedType(of: path)) (it holds \(holds)): \
                name it after its main type (Type+Feature.swift for an extension), split it, or list it under \
                "### Files named after what they hold" in docs/ARCHITECTURE.md with the reason
                """)
        }
    }

    @Test("No type is declared and extended in more than three files of Sources/")
    func typesAreExtendedInThreeFilesAtMost() throws {
        var files: [String: Set<String>] = [:]
        var extended: Set<String> = []
        for (path, declarations) in try Self.sources() {
            for declaration in declarations where declaration.kind != "typealias" {
                files[declaration.qualifiedName, default: []].insert(path)
                if declaration.kind == "extension" { extended.insert(declaration.qualifiedName) }
            }
        }
        for type in extended.sorted() {
            let paths = files[type] ?? []
            #expect(
                paths.count <= Self.filesPerType,
                "\(type) is declared and extended in \(paths.count) files (at most \(Self.filesPerType)): \(paths.sorted().joined(separator: ", "))"
            )
        }
    }

    @Test("Each exception of docs/ARCHITECTURE.md's \"Files named after what they hold\" is a file of Sources/, says why, and is needed")
    func exceptionsAreDocumented() throws {
        let exceptions = try Self.exceptions()
        #expect(!exceptions.isEmpty, "the table under \"### Files named after what they hold\" in docs/ARCHITECTURE.md")
        let sources = Dictionary(try Self.sources().map { ($0.path, $0.declarations) }, uniquingKeysWith: { first, _ in first })
        for (path, reason) in exceptions.sorted(by: { $0.key < $1.key }) {
            #expect(!reason.isEmpty, "\(path): the table gives no reason")
            guard let declarations = sources[path] else {
                Issue.record("\(path), listed as an exception, is not a file of Sources/")
                continue
            }
            #expect(!Self.isNamedAfterItsType(path, declarations), "\(path) is named after its type: it needs no exception")
        }
    }
}
