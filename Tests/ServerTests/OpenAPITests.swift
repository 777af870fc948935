import Foundation
import Server
import Testing

/// docs/openapi.yaml: its reader (`RouteAgreementTests` compares the operations with the routes),
/// and the error codes nginx answers with.
@Suite struct OpenAPITests {
    static let document = #filePath.replacingOccurrences(of: "Tests/ServerTests/OpenAPITests.swift", with: "docs/openapi.yaml")

    /// The (method, path) pairs under `paths:`: a path at two spaces of indent, its operations at four.
    static func documentedOperations(_ text: String) -> Set<String> { Set(operations(text).keys) }

    /// The operations under `paths:`, as `METHOD /path`, each with the lines of its block (those
    /// indented deeper than the operation's four spaces, up to the next operation or path).
    static func operations(_ text: String) -> [String: [Substring]] {
        let methods: Set = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        var operations: [String: [Substring]] = [:]
        var inPaths = false
        var path: String?
        var operation: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /") && !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
                operation = nil
            } else if line.hasPrefix("    ") && !line.hasPrefix("     ") {
                operation = nil
                if let path, line.hasSuffix(":"), methods.contains(String(line.dropFirst(4).dropLast())) {
                    let key = line.dropFirst(4).dropLast().uppercased() + " " + path
                    operations[key] = []
                    operation = key
                }
            } else if let operation, line.hasPrefix("     ") {
                operations[operation]?.append(line)
            }
        }
        return operations
    }

    @Test("Every error code nginx answers with (public/errors/*.json) is in the document's enum of error codes")
    func nginxErrorCodesDocumented() throws {
        let text = try String(contentsOfFile: OpenAPITests.document, encoding: .utf8)
        let errors = OpenAPITests.document.replacingOccurrences(of: "docs/openapi.yaml", with: "public/errors")
        let files = try FileManager.default.contentsOfDirectory(atPath: errors).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 9, "nginx's error bodies")
        for file in files {
            let body = try String(contentsOfFile: errors + "/" + file, encoding: .utf8)
            let code = try #require(body.split(separator: "\"").dropFirst(3).first, "\(file)")
            #expect(text.contains("            - \(code)\n"), "\(file): \(code) is not in the enum")
        }
    }

    @Test("The reader of the document finds an undocumented route and a documented one that does not exist")
    func readerSeesDifferences() {
        let text = """
            openapi: 3.1.0
            paths:
              /health:
                get:
                  summary: x
              /auth/sessions/{id}:
                delete:
                  parameters: []
                summary: not an operation
            components:
              schemas:
                post:
            """
        #expect(OpenAPITests.documentedOperations(text) == ["GET /health", "DELETE /auth/sessions/{id}"])
    }
}
