import Foundation
package import JOSE

/// The emulator's configuration: one JSON file, read at start.
///
/// ```json
/// {"socket": "/run/emulator.sock", "stateFile": "/var/lib/emulator/state.json",
///  "teamId": "TEAMID0001", "keyId": "KEYID00001", "teamKeyFile": "/etc/siwa/apple_key.p8",
///  "clients": [{"id": "com.example.app"},
///              {"id": "com.example.web", "redirectURIs": ["https://example.com/auth/callback"]}],
///  "adminSecretFile": "/etc/emulator/admin_secret", "notificationURL": "https://example.com/webhook/apple",
///  "caFile": "/etc/ssl/local.pem", "threads": 4, "saveChanges": true,
///  "otherTeams": [{"teamId": "TEAMID0002", "keyId": "KEYID00002", "teamKeyFile": "/etc/siwa/team_b.p8"}]}
/// ```
///
/// The clients belong to the first team until a transfer (`POST /admin/transfers`) moves them to
/// one of `otherTeams`.
package struct EmulatorConfiguration: Sendable, Decodable {
    /// A client id the team owns: a bundle id (native apps) or a Services ID with its registered
    /// return URLs (the web flow).
    package struct Client: Sendable, Decodable, Equatable {
        package var id: String
        package var redirectURIs: [String]

        package init(id: String, redirectURIs: [String] = []) {
            self.id = id
            self.redirectURIs = redirectURIs
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            redirectURIs = try container.decodeIfPresent([String].self, forKey: .redirectURIs) ?? []
        }

        private enum CodingKeys: String, CodingKey { case id, redirectURIs }
    }

    /// Another developer team, which a transfer can move clients to.
    package struct Team: Sendable, Decodable, Equatable {
        package var teamID: String
        package var keyID: String
        package var teamKeyFile: String

        package init(teamID: String, keyID: String, teamKeyFile: String) {
            self.teamID = teamID
            self.keyID = keyID
            self.teamKeyFile = teamKeyFile
        }

        private enum CodingKeys: String, CodingKey {
            case teamID = "teamId"
            case keyID = "keyId"
            case teamKeyFile
        }
    }

    /// The FastCGI unix socket to listen on.
    package var socket: String
    /// Where the state (users, authorizations, tokens, keys) is kept; nil keeps it in memory only.
    package var stateFile: String?
    /// Whether every change is written to `stateFile` (the default). Off, the file is read at start
    /// (and written once, with a new signing key, if it did not exist) and then left alone: each
    /// write is the whole state, which a load test of thousands of code exchanges cannot afford.
    package var saveChanges: Bool
    /// The team whose client secrets are accepted (`iss` of a client secret).
    package var teamID: String
    /// The id of the team's Sign in with Apple key (`kid` of a client secret).
    package var keyID: String
    /// The team's key: the `.p8` private key or its `PUBLIC KEY` PEM.
    package var teamKeyFile: String
    package var clients: [Client]
    /// The admin API's bearer secret; without it the admin API is off (404).
    package var adminSecretFile: String?
    /// Where server-to-server notifications are sent.
    package var notificationURL: String?
    /// The CA file that notification delivery trusts (for a local self-signed certificate).
    package var caFile: String?
    /// Worker threads.
    package var threads: Int
    /// The other teams (team transfer).
    package var otherTeams: [Team]

    package init(
        socket: String, stateFile: String? = nil, teamID: String, keyID: String, teamKeyFile: String,
        clients: [Client], adminSecretFile: String? = nil, notificationURL: String? = nil, caFile: String? = nil,
        threads: Int = 4, otherTeams: [Team] = [], saveChanges: Bool = true
    ) {
        self.saveChanges = saveChanges
        self.otherTeams = otherTeams
        self.socket = socket
        self.stateFile = stateFile
        self.teamID = teamID
        self.keyID = keyID
        self.teamKeyFile = teamKeyFile
        self.clients = clients
        self.adminSecretFile = adminSecretFile
        self.notificationURL = notificationURL
        self.caFile = caFile
        self.threads = threads
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        socket = try container.decode(String.self, forKey: .socket)
        stateFile = try container.decodeIfPresent(String.self, forKey: .stateFile)
        teamID = try container.decode(String.self, forKey: .teamID)
        keyID = try container.decode(String.self, forKey: .keyID)
        teamKeyFile = try container.decode(String.self, forKey: .teamKeyFile)
        clients = try container.decode([Client].self, forKey: .clients)
        adminSecretFile = try container.decodeIfPresent(String.self, forKey: .adminSecretFile)
        notificationURL = try container.decodeIfPresent(String.self, forKey: .notificationURL)
        caFile = try container.decodeIfPresent(String.self, forKey: .caFile)
        threads = try container.decodeIfPresent(Int.self, forKey: .threads) ?? 4
        otherTeams = try container.decodeIfPresent([Team].self, forKey: .otherTeams) ?? []
        saveChanges = try container.decodeIfPresent(Bool.self, forKey: .saveChanges) ?? true
    }

    private enum CodingKeys: String, CodingKey {
        case socket, stateFile
        case teamID = "teamId"
        case keyID = "keyId"
        case teamKeyFile, clients, adminSecretFile
        case notificationURL, caFile, threads, otherTeams, saveChanges
    }

    /// Reads and checks the configuration file at `path`.
    /// - Throws: `EmulatorConfigurationError` naming what is wrong.
    package static func load(path: String) throws -> EmulatorConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EmulatorConfigurationError("cannot read \(path)")
        }
        let configuration: EmulatorConfiguration
        do {
            configuration = try JSONDecoder().decode(EmulatorConfiguration.self, from: data)
        } catch {
            throw EmulatorConfigurationError("\(path) is not a valid configuration: \(error)")
        }
        try configuration.validate()
        return configuration
    }

    func validate() throws {
        guard !clients.isEmpty else { throw EmulatorConfigurationError("clients: at least one client id is needed") }
        guard Set(clients.map(\.id)).count == clients.count else { throw EmulatorConfigurationError("clients: duplicate id") }
        guard (1...64).contains(threads) else { throw EmulatorConfigurationError("threads: 1 to 64") }
        guard Set([teamID] + otherTeams.map(\.teamID)).count == otherTeams.count + 1 else {
            throw EmulatorConfigurationError("otherTeams: every team id must differ from the others and from teamId")
        }
        for client in clients {
            for uri in client.redirectURIs where !uri.hasPrefix("https://") || uri.contains("#") {
                throw EmulatorConfigurationError("clients[\(client.id)].redirectURIs: \(uri) must be https without a fragment")
            }
        }
    }

    /// Every team: the first one (which owns the clients at first), then `otherTeams`.
    package var teams: [Team] { [Team(teamID: teamID, keyID: keyID, teamKeyFile: teamKeyFile)] + otherTeams }

    /// A team's public key, from the `.p8` private key or a `PUBLIC KEY` PEM in `file`.
    package static func teamPublicKey(file: String) throws -> P256PublicKey {
        guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw EmulatorConfigurationError("teamKeyFile: cannot read \(file)")
        }
        if let key = try? P256PublicKey(pem: pem) { return key }
        if let key = try? P256PrivateKey(pem: pem) { return key.publicKey }
        throw EmulatorConfigurationError("teamKeyFile: \(file) holds no P-256 key")
    }

    /// The admin secret, or nil when the admin API is off.
    package func adminSecret() throws -> String? {
        guard let adminSecretFile else { return nil }
        guard let text = try? String(contentsOfFile: adminSecretFile, encoding: .utf8) else {
            throw EmulatorConfigurationError("adminSecretFile: cannot read \(adminSecretFile)")
        }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.utf8.count >= 16 else { throw EmulatorConfigurationError("adminSecretFile: the secret needs 16 characters or more") }
        return secret
    }

    func client(_ id: String) -> Client? { clients.first { $0.id == id } }
}

/// A configuration the emulator cannot start with.
package struct EmulatorConfigurationError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
