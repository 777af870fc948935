public import Foundation

/// Loads the test vectors copied into `Tests/Fixtures/vectors` (see `PROVENANCE.md` there).
public enum Fixtures {
    /// The contents of `vectors/<path>`.
    public static func data(_ path: String) throws -> Data {
        guard let base = Bundle.module.url(forResource: "vectors", withExtension: nil) else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try Data(contentsOf: base.appendingPathComponent(path))
    }

    /// `vectors/<path>` parsed as JSON.
    public static func json(_ path: String) throws -> Any {
        try JSONSerialization.jsonObject(with: data(path))
    }

    /// `vectors/<path>` decoded into `type`.
    public static func decode<T: Decodable>(_ type: T.Type, from path: String) throws -> T {
        try JSONDecoder().decode(type, from: data(path))
    }
}
