import Foundation
import Server
import Testing

/// docs/openapi.yaml against the router: the document names exactly the routes the server answers.
@Suite struct OpenAPITests {
    static let document = #filePath.replacingOccurrences(of: "Tests/ServerTests/OpenAPITests.swift", with: "docs/openapi.yaml")

    /// The (method, path) pairs under `paths:`: a path at two spaces of indent, its operations at four.
    static func documentedOperations(_ text: String) -> Set<String> {
        let methods: Set = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        var operations: Set<String> = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /") && !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    ") && !line.hasPrefix("     "), let path, line.hasSuffix(":"),
                methods.contains(String(line.dropFirst(4).dropLast()))
            {
                operations.insert(line.dropFirst(4).dropLast().uppercased() + " " + path)
            }
        }
        return operations
    }

    @Test("Every route of the router is documented, and every documented operation is a route")
    func routesMatchTheDocument() throws {
        let text = try String(contentsOfFile: OpenAPITests.document, encoding: .utf8)
        let documented = OpenAPITests.documentedOperations(text)
        let routed = Set(Application.routes().routes.map { "\($0.method) \($0.pattern)" })
        #expect(routed.count == 24, "the router has its routes")
        #expect(routed.subtracting(documented).isEmpty, "routes missing from docs/openapi.yaml: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed).sorted())")
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
