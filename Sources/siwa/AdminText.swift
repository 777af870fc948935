import AccountData
import Accounts
import Foundation
import Identity
import JOSE
import SiwaConfig
import StrictJSON
import SyncRules

/// The readable output of `siwa admin`: tables and a user's description.
enum AdminText {
    /// Prints `rows` under `header`, each column as wide as its widest cell.
    static func table(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        for row in all {
            print(zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
    }

    /// Unix milliseconds as `2026-11-23T14:05:09Z`, like the webhook commands' times.
    static func time(_ milliseconds: Int64) -> String { Webhooks.time(milliseconds / 1000) }

    static func json(_ user: UserSummary) -> String {
        JSONText.object([
            ("id", .string(String(user.userID))), ("name", user.name.map { .string($0) }), ("email", user.email.map { .string($0) }),
            ("createdAt", .integer(user.createdAt)), ("disabled", .bool(user.isDisabled)),
        ])
    }

    /// Apple's `real_user_status` in words.
    static func realUserStatus(_ status: Int64?) -> String {
        switch status {
        case 2: "likely real"
        case 1: "unknown"
        case 0: "unsupported"
        default: "not given"
        }
    }

    /// A user's record, as `siwa admin show` prints it.
    static func describe(_ export: AccountExport) -> String {
        let record = export.record
        var lines: [String] = []
        let name = [record.firstName, record.lastName].compactMap { $0 }.joined(separator: " ")
        lines.append("user \(record.userID)  \(name.isEmpty ? "(no name)" : name)  created \(time(record.createdAt))")
        if let disabledAt = record.disabledAt {
            lines.append("DISABLED since \(time(disabledAt))\(record.disabledReason.map { ": \($0)" } ?? "")")
        }
        lines.append("emails:")
        for email in record.emails {
            let flags = [
                email.isPrivateRelay ? "Hide My Email" : nil, email.isPrivateRelay && !email.forwardingEnabled ? "forwarding off" : nil,
                email.verified ? "verified" : "not verified",
            ].compactMap { $0 }
            lines.append("  \(email.address)  (\(flags.joined(separator: ", ")))")
        }
        lines.append("Apple identities:")
        for identity in record.identities {
            lines.append(
                "  sub \(identity.sub)  team \(identity.teamID)  last client \(identity.clientID)  consent \(identity.consentState)  "
                    + "real user: \(realUserStatus(identity.realUserStatus))  Apple tokens for: "
                    + (identity.clientIDsWithToken.isEmpty ? "none" : identity.clientIDsWithToken.joined(separator: ", ")))
        }
        let active = record.sessions.filter { $0.revokedAt == nil && $0.expiresAt > export.exportedAt }
        let lastSignIn = record.sessions.map(\.createdAt).max()
        lines.append("sessions: \(active.count) active of \(record.sessions.count); last sign-in \(lastSignIn.map(time) ?? "never")")
        for session in active {
            lines.append(
                "  #\(session.id)  \(session.device ?? (session.isWeb ? "web browser" : "device"))  \(session.isWeb ? "web" : "native")  "
                    + "last used \(time(session.lastUsedAt))")
        }
        let synced = export.progress.records
        let lessons = synced.count { $0.collection == SyncWire.progress }
        let achievements = synced.count { $0.collection == SyncWire.achievements }
        let declared = synced.count { (SyncWire.firstDeclared..<export.collections.wire.profile).contains($0.collection) }
        lines.append(
            "synced: \(lessons) lesson(s), \(achievements) achievement(s)"
                + (declared > 0 ? ", \(declared) record(s) of declared collections" : ""))
        lines.append("latest audit events (siwa admin audit --user \(record.userID) for more):")
        for event in record.auditEvents.prefix(10) {
            lines.append("  \(time(event.occurredAt))  \(event.type)  \(event.detail ?? "")")
        }
        return lines.joined(separator: "\n")
    }
}
