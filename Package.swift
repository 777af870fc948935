// swift-tools-version:6.1
import PackageDescription

/// One set of compiler settings for every Swift target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// A product of another package that only the server's targets use. With the `Server` trait off (an
/// app that depends on this package for SIWAKit: `traits: []`), SwiftPM neither fetches nor builds
/// the packages these come from.
func serverProduct(_ name: String, _ package: String) -> Target.Dependency {
    .product(name: name, package: package, condition: .when(traits: ["Server"]))
}

let package = Package(
    name: "siwa",
    // SIWAKit's platforms. The server's targets build on Linux (they need libfcgi, OpenSSL,
    // Connector/C and libcurl); on macOS they would need macOS 15 for `Synchronization`.
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .executable(name: "siwa", targets: ["siwa"]),
        .executable(name: "appleid-emulator", targets: ["appleid-emulator"]),
        // The app's half: sign-in, the session, authenticated requests, sync. Needs none of the server's modules.
        .library(name: "SIWAKit", type: .static, targets: ["SIWAKit"]),
    ],
    // On by default: `swift build` here builds everything. An app turns it off to get SIWAKit alone:
    // `.package(url: ..., from: ..., traits: [])`.
    traits: [
        .trait(name: "Server", description: "The server, the emulator and their tests (their dependencies on other packages)."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation --target SIWAKit`; used by no target.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Sync's merge rules and declared collections, shared by the server and the app: the strict
        // JSON reader is its one dependency.
        .target(name: "SyncRules", dependencies: ["StrictJSON"], swiftSettings: swiftSettings),
        // The app's half. Foundation, the merge rules, and SHA-256 for the nonce: CryptoKit on Apple's
        // platforms, OpenSSL on Linux (where the tests run it), and libcurl on Linux for
        // DevelopmentTransport.
        .target(
            name: "SIWAKit",
            dependencies: [
                "SyncRules", "StrictJSON", .target(name: "COpenSSL", condition: .when(platforms: [.linux])),
                // DevelopmentTransport on Linux, where URLSession cannot be told to trust one more CA.
                .target(name: "HTTPClient", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: swiftSettings),

        // C libraries of the platform, one module map each.
        .systemLibrary(name: "CFastCGI", pkgConfig: "fcgi", providers: [.apt(["libfcgi-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMariaDB", pkgConfig: "libmariadb", providers: [.apt(["libmariadb-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // glibc's malloc.h: what the process has allocated, and giving free memory back.
        .systemLibrary(name: "CMalloc"),

        // Threads that belong to what starts them: started, stopped, joined, closing what they own.
        // The service registry, and thread-local values. A thread started lazily that cannot start is
        // logged and counted here.
        .target(
            name: "Threads", dependencies: [serverProduct("Logging", "swift-log"), serverProduct("CoreMetrics", "swift-metrics")],
            swiftSettings: swiftSettings),
        // What malloc holds, and giving its free pages back (the sync cache): the only importer of CMalloc.
        .target(name: "Allocator", dependencies: ["CMalloc"], swiftSettings: swiftSettings),

        // Wrappers: the only importers of their C module.
        .target(name: "FastCGI", dependencies: ["CFastCGI", "Threads"], swiftSettings: swiftSettings),
        // `application/x-www-form-urlencoded`, for the calls to Apple and the forms and queries we read.
        .target(name: "WebForms", swiftSettings: swiftSettings),
        // Strict JSON: the pull reader, the object reader with its limits, and the writers. No dependencies.
        .target(name: "StrictJSON", swiftSettings: swiftSettings),
        .target(name: "JOSE", dependencies: ["COpenSSL", "StrictJSON"], swiftSettings: swiftSettings),
        .target(
            name: "MariaDB", dependencies: ["CMariaDB", "Threads", serverProduct("CoreMetrics", "swift-metrics")],
            swiftSettings: swiftSettings),
        .target(name: "HTTPClient", dependencies: ["CCurl", "WebForms"], swiftSettings: swiftSettings),

        // Metrics: the families the modules record into (swift-metrics), and their Prometheus exposition.
        .target(
            name: "Telemetry",
            dependencies: [
                serverProduct("CoreMetrics", "swift-metrics"), serverProduct("Prometheus", "swift-prometheus"),
            ],
            swiftSettings: swiftSettings),

        // Domain: Apple's protocol, without FastCGI or SQL.
        .target(
            name: "AppleID",
            dependencies: ["JOSE", "StrictJSON", "HTTPClient", "WebForms", "Telemetry", "Threads", serverProduct("CoreMetrics", "swift-metrics")],
            swiftSettings: swiftSettings),

        // An account's data as values, without SQL: what the use cases hand to the HTTP layer.
        .target(name: "AccountData", dependencies: ["SyncRules"], swiftSettings: swiftSettings),

        // Accounts: users, identities, emails, sessions, sync: the SQL, and the migrations.
        .target(
            name: "Accounts",
            dependencies: [
                "AccountData", "MariaDB", "JOSE", "StrictJSON", "SyncRules",
            ],
            swiftSettings: swiftSettings),

        // Use cases: our tokens and the operations of the HTTP contract, without HTTP.
        .target(
            name: "Identity",
            dependencies: [
                "AccountData", "Accounts", "AppleID", "JOSE", "StrictJSON", "MariaDB", "HTTPClient", "WebForms", "SyncRules", "Telemetry", "Threads",
                "Allocator",
                serverProduct("Logging", "swift-log"),
                serverProduct("CoreMetrics", "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),

        // The configuration of `siwa` (its key table, checks and example), its logs and its metrics
        // bootstrap: what every subcommand needs, without the HTTP layer.
        .target(
            name: "SiwaConfig",
            dependencies: [
                "Identity", "AppleID", "JOSE", "StrictJSON", "MariaDB", "HTTPClient", "WebForms", "Telemetry", "SyncRules",
                serverProduct("Logging", "swift-log"),
                serverProduct("CoreMetrics", "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),

        // The HTTP layer: routes that decode, call one use case and encode.
        .target(
            name: "Server",
            dependencies: [
                "FastCGI", "JOSE", "StrictJSON", "AppleID", "AccountData", "Identity", "SiwaConfig", "WebForms", "SyncRules", "Telemetry",
                serverProduct("Logging", "swift-log"), serverProduct("CoreMetrics", "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "siwa",
            dependencies: [
                "Server", "SiwaConfig", "Identity", "AccountData", "Accounts", "Allocator", "FastCGI", "MariaDB", "JOSE", "StrictJSON", "AppleID", "HTTPClient", "WebForms",
                "Telemetry",
                "SyncRules", "Threads", serverProduct("ArgumentParser", "swift-argument-parser"),
                serverProduct("CoreMetrics", "swift-metrics"),
                serverProduct("Logging", "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The Apple ID emulator: Apple's endpoints for development and tests.
        .target(name: "AppleIDEmulator", dependencies: ["FastCGI", "JOSE", "StrictJSON", "HTTPClient", "WebForms"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "appleid-emulator",
            dependencies: [
                "AppleIDEmulator", "FastCGI", "HTTPClient", "WebForms", "Threads",
                serverProduct("ArgumentParser", "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        // Shared vectors of the merge rules for the JavaScript client's test (Tests/Web): not a product.
        .executableTarget(name: "SyncVectors", dependencies: ["SIWATestSupport", "SyncRules", "StrictJSON"], path: "Tests/SyncVectors", swiftSettings: swiftSettings),

        // Test helpers: a FastCGI client that plays nginx's part, a small HTTP server, a settable clock.
        .target(name: "SIWATestSupport", dependencies: ["AccountData", "Accounts", "Identity", "SyncRules", "Threads"], swiftSettings: swiftSettings),
        // Public test vectors (RFC, Wycheproof, real Apple tokens), copied with their provenance.
        .target(
            name: "SIWAFixtures", path: "Tests/Fixtures", exclude: ["PROVENANCE.md"],
            resources: [.copy("vectors")], swiftSettings: swiftSettings),

        // Tests that need no server.
        .testTarget(name: "FastCGITests", dependencies: ["FastCGI", "SIWATestSupport", "Threads"], swiftSettings: swiftSettings),
        .testTarget(name: "ThreadsTests", dependencies: ["Threads", serverProduct("Logging", "swift-log")], swiftSettings: swiftSettings),
        .testTarget(name: "MariaDBTests", dependencies: ["MariaDB"], swiftSettings: swiftSettings),
        .testTarget(name: "WebFormsTests", dependencies: ["WebForms"], swiftSettings: swiftSettings),
        .testTarget(name: "StrictJSONTests", dependencies: ["StrictJSON"], swiftSettings: swiftSettings),
        .testTarget(name: "JOSETests", dependencies: ["JOSE", "StrictJSON", "SIWAFixtures"], swiftSettings: swiftSettings),
        .testTarget(
            name: "AppleIDTests", dependencies: ["AppleID", "JOSE", "StrictJSON", "HTTPClient", "WebForms", "SIWAFixtures", "SIWATestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "Server", "SiwaConfig", "Identity", "AccountData", "Accounts", "SyncRules", "FastCGI", "HTTPClient", "WebForms", "MariaDB", "JOSE", "StrictJSON",
                "SIWATestSupport", "Telemetry", "Threads",
                serverProduct("Logging", "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "AppleIDEmulatorTests",
            dependencies: ["AppleIDEmulator", "AppleID", "FastCGI", "JOSE", "StrictJSON", "HTTPClient", "WebForms", "SIWAFixtures", "SIWATestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "IdentityTests",
            dependencies: ["Identity", "AccountData", "Accounts", "Allocator", "JOSE", "StrictJSON", "SyncRules", "SIWATestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "SiwaConfigTests",
            dependencies: [
                "SiwaConfig", "Identity", "HTTPClient", "WebForms", "JOSE", "StrictJSON", "MariaDB", "SIWATestSupport", "SyncRules",
                serverProduct("Logging", "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "AccountsTests", dependencies: ["AccountData", "Accounts", "MariaDB", "StrictJSON", "SyncRules"], swiftSettings: swiftSettings),
        .testTarget(name: "SyncRulesTests", dependencies: ["SyncRules", "StrictJSON", "SIWATestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "SIWAKitTests", dependencies: ["SIWAKit", "SyncRules", "SIWATestSupport"], swiftSettings: swiftSettings),
        // Tests that need a MariaDB server (SIWA_TEST_DB_*); they fail without one.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "MariaDB", "Server", "SiwaConfig", "Identity", "AccountData", "Accounts", "AppleID", "JOSE", "StrictJSON", "FastCGI", "HTTPClient", "WebForms",
                "SIWATestSupport", "SyncRules",
                "SIWAFixtures", "Telemetry", serverProduct("Logging", "swift-log"),
                serverProduct("CoreMetrics", "swift-metrics"),
            ],
            exclude: ["Recorded"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
