import AccountData
package import Accounts
import FoundationEssentials
import JOSE
import StrictJSON

/// An account export as one JSON document: the body of `GET /auth/account/export` and of `siwa
/// admin export`. Times are Unix milliseconds; ids are strings, as everywhere in the HTTP contract.
package enum AccountExportJSON {
    /// The version of the document's layout.
    static let format = 1

    package static func json(_ export: AccountExport) -> String {
        let record = export.record
        let user = JSONText.object([
            ("id", .string(String(record.userID))), ("firstName", record.firstName.map { .string($0) }),
            ("lastName", record.lastName.map { .string($0) }), ("createdAt", .integer(record.createdAt)),
            ("disabledAt", record.disabledAt.map { .integer($0) }),
        ])
        let emails = record.emails.map { email in
            JSONText.object([
                ("address", .string(email.address)), ("isPrivateRelay", .bool(email.isPrivateRelay)),
                ("forwardingEnabled", .bool(email.forwardingEnabled)), ("verified", .bool(email.verified)),
                ("createdAt", .integer(email.createdAt)),
            ])
        }
        let identities = record.identities.map { identity in
            JSONText.object([
                ("sub", .string(identity.sub)), ("teamId", .string(identity.teamID)), ("clientId", .string(identity.clientID)),
                ("consentState", .string(identity.consentState)), ("realUserStatus", identity.realUserStatus.map { .integer($0) }),
                ("appleTokenHeldFor", .raw(array(identity.clientIDsWithToken.map(JSONText.quoted)))),
                ("createdAt", .integer(identity.createdAt)),
            ])
        }
        let sessions = record.sessions.map { session in
            JSONText.object([
                ("id", .string(String(session.id))), ("device", session.device.map { .string($0) }),
                ("kind", .string(session.isWeb ? "web" : "native")), ("clientId", session.clientID.map { .string($0) }),
                ("createdAt", .integer(session.createdAt)), ("lastUsedAt", .integer(session.lastUsedAt)),
                ("expiresAt", .integer(session.expiresAt)), ("revokedAt", session.revokedAt.map { .integer($0) }),
                ("revokeReason", session.revokeReason.map { .string($0) }),
            ])
        }
        return JSONText.object([
            ("format", .integer(Int64(format))), ("exportedAt", .integer(export.exportedAt)), ("user", .raw(user)),
            ("emails", .raw(array(emails))), ("appleIdentities", .raw(array(identities))), ("sessions", .raw(array(sessions))),
            ("sync", .raw(String(decoding: SyncDeltaJSON.json(export.progress, collections: export.collections), as: UTF8.self))),
            ("auditEvents", .raw(array(record.auditEvents.map(json)))),
        ])
    }

    /// One audit event (also a line of `siwa admin audit --json`).
    package static func json(_ event: UserRecord.AuditEvent) -> String {
        JSONText.object([
            ("id", .string(String(event.id))), ("type", .string(event.type)), ("occurredAt", .integer(event.occurredAt)),
            ("userId", event.userID.map { .string(String($0)) }), ("sessionId", event.sessionID.map { .string(String($0)) }),
            ("remoteAddress", event.remoteAddress.map { .string($0) }), ("detail", event.detail.map { .raw($0) }),
        ])
    }

    package static func array(_ elements: [String]) -> String { "[" + elements.joined(separator: ",") + "]" }
}
