package import AccountData
import Foundation
package import MariaDB

/// What a verified Sign in with Apple tells us about a person, ready to store.
package struct AppleSignIn: Sendable {
    package var teamID: String
    /// `sub`, from the verified identity token only (docs/SECURITY.md rule 2).
    package var sub: String
    /// The client id the token was issued to (`aud`).
    package var audience: String
    package var email: String?
    package var emailVerified: Bool?
    package var isPrivateEmail: Bool?
    package var transferSub: String?
    /// Apple's `real_user_status`: 0 unsupported, 1 unknown, 2 likely real; nil when the token has none.
    package var realUserStatus: Int?
    /// The name, which Apple gives only on the first authorization (not from the token).
    package var firstName: String?
    package var lastName: String?
    /// Apple's refresh token, already encrypted, with the data key's id and the client id that minted it.
    package var appleRefreshToken: SealedAppleToken?
    /// Seconds from now to the first daily check of `appleRefreshToken` at Apple (the caller's
    /// validation schedule); 0: due at once.
    package var firstValidationIn: Int

    package init(
        teamID: String, sub: String, audience: String, email: String? = nil, emailVerified: Bool? = nil,
        isPrivateEmail: Bool? = nil, transferSub: String? = nil, realUserStatus: Int? = nil, firstName: String? = nil,
        lastName: String? = nil, appleRefreshToken: SealedAppleToken? = nil, firstValidationIn: Int = 0
    ) {
        self.teamID = teamID
        self.sub = sub
        self.audience = audience
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.transferSub = transferSub
        self.realUserStatus = realUserStatus
        self.firstName = firstName
        self.lastName = lastName
        self.appleRefreshToken = appleRefreshToken
        self.firstValidationIn = firstValidationIn
    }
}

/// Apple's refresh token encrypted at rest (AES-256-GCM), the id of the key, and the client id
/// that minted it (needed to validate and revoke it, docs/SECURITY.md rule 9).
package struct SealedAppleToken: Sendable, Equatable {
    package var ciphertext: [UInt8]
    package var keyID: String
    package var clientID: String

    package init(ciphertext: [UInt8], keyID: String, clientID: String) {
        self.ciphertext = ciphertext
        self.keyID = keyID
        self.clientID = clientID
    }
}

/// The account a sign-in landed on.
package struct SignedInAccount: Sendable, Equatable {
    package var userID: UInt64
    package var isNewUser: Bool
    /// A new user's profile, exactly as just stored (so it needs no reading back); nil for a returning user.
    package var newProfile: Profile?
    /// How the identity came to this user, when this sign-in attached it to a user it did not
    /// belong to yet (a guest, an external user, the user of a team transfer).
    package var linkedBy: AccountLink?

    package init(userID: UInt64, isNewUser: Bool, newProfile: Profile? = nil, linkedBy: AccountLink? = nil) {
        self.userID = userID
        self.isNewUser = isNewUser
        self.newProfile = newProfile
        self.linkedBy = linkedBy
    }

    package static func == (lhs: SignedInAccount, rhs: SignedInAccount) -> Bool {
        lhs.userID == rhs.userID && lhs.isNewUser == rhs.isNewUser && lhs.linkedBy == rhs.linkedBy
    }
}

/// Users found and created from Apple identities, in one transaction per sign-in.
///
/// A user is found by (team, `sub`) only, never by email (docs/SECURITY.md rule 10). The name is stored when
/// given and never replaced by an empty one; an email is stored as Apple gives it (a relay address
/// flagged as such, `email_verified` as Apple says), and a sign-in without one keeps what is stored.
package enum AppleAccounts {
    /// The longest name part kept.
    package static let maximumNameLength = 100

    /// Finds or creates the user of `signIn` and records what it brings. Must run inside a
    /// transaction (`connection.transaction`), so nothing is half-written. The writes whose result
    /// it does not read go with the transaction's next statement (`Connection.executeWithNext`):
    /// their errors, `.duplicateEntry` included, are thrown by the caller's next statement or COMMIT.
    ///
    /// The identity is found by (team, `sub`); failing that, by a `transfer_sub` the token carries
    /// and `siwa transfer prepare` stored (the user of the sending team's identity). With `target`,
    /// the identity goes to that user (see `AccountTarget`), and a conflict is refused without
    /// changing anything.
    /// - Throws: `AccountConflict` when the identity or the target belongs to someone else;
    ///   `MariaDBError`: `.duplicateEntry` when another worker created the same identity at the
    ///   same moment, `.deadlock` under contention (run the transaction again: the retry finds it),
    ///   here or from the transaction's next statement.
    /// - Parameter newUserID: the id of the user to create when the identity has none (taken from
    ///   `IDBlocks`); called only then.
    /// Whether an account here holds the Apple identity `sub` of `teamID`.
    package static func isKnown(teamID: String, sub: String, on connection: Connection) throws -> Bool {
        try !connection.query("SELECT 1 FROM apple_identities WHERE team_id = ? AND sub = ? LIMIT 1", teamID, sub).isEmpty
    }

    package static func signIn(
        _ signIn: AppleSignIn, attachingTo target: AccountTarget? = nil, newUserID: () throws -> UInt64, on connection: Connection
    ) throws -> SignedInAccount {
        let firstName = sanitizedName(signIn.firstName)
        let lastName = sanitizedName(signIn.lastName)
        // A plain read, not FOR UPDATE: a locking read of a missing key takes a gap lock, and two
        // first sign-ins in the same gap would deadlock on their inserts. A concurrent creation
        // shows up as `.duplicateEntry` on the unique (team, sub) instead; the retry finds the row.
        let existing = try connection.query(
            "SELECT id, user_id FROM apple_identities WHERE team_id = ? AND sub = ?", signIn.teamID, signIn.sub
        ).first
        var owner: UInt64? = try existing?.decode(column: "user_id")
        var transfer: AppleTransfers.Origin?
        if existing == nil, let transferSub = signIn.transferSub {
            transfer = try AppleTransfers.origin(of: transferSub, receivingTeam: signIn.teamID, on: connection)
            owner = transfer?.userID
        }
        let placement = try AccountPlacement.place(owner: owner, target: target, on: connection)
        let userID: UInt64
        // A new user's creation time is the one the answer gives, stored to the millisecond.
        let createdAt = UnixTime.nowMilliseconds()
        if let placed = placement.userID {
            userID = placed
        } else {
            userID = try newUserID()
            try connection.executeWithNext(
                "INSERT INTO users (id, first_name, last_name, external_id, created_at) VALUES (?, ?, ?, ?, FROM_UNIXTIME(? / 1000))",
                userID, firstName, lastName, placement.externalID, createdAt)
        }
        let identityID: UInt64?
        if let existing {
            identityID = try existing.decode(column: "id")
            try connection.executeWithNext(
                """
                UPDATE apple_identities SET audience = ?, consent_state = 'active', transfer_sub = COALESCE(?, transfer_sub),
                    real_user_status = COALESCE(?, real_user_status), updated_at = UTC_TIMESTAMP(3)
                WHERE team_id = ? AND sub = ?
                """, signIn.audience, signIn.transferSub, signIn.realUserStatus, signIn.teamID, signIn.sub)
        } else {
            let insert: SQL = """
                INSERT INTO apple_identities (user_id, team_id, sub, audience, transfer_sub, real_user_status)
                VALUES (\(userID), \(signIn.teamID), \(signIn.sub), \(signIn.audience), \(signIn.transferSub), \(signIn.realUserStatus))
                """
            // The new row's id is needed only to resolve a transfer or to keep Apple's token;
            // otherwise the insert goes with the next statement.
            if transfer != nil || signIn.appleRefreshToken != nil {
                identityID = try connection.execute(insert).lastInsertID
            } else {
                try connection.executeWithNext(insert)
                identityID = nil
            }
            if let transfer, let identityID { try AppleTransfers.markResolved(transfer.identityID, to: identityID, on: connection) }
        }
        if placement.userID != nil, firstName != nil || lastName != nil {
            try connection.executeWithNext(
                "UPDATE users SET first_name = COALESCE(?, first_name), last_name = COALESCE(?, last_name), updated_at = UTC_TIMESTAMP(3) WHERE id = ?",
                firstName, lastName, userID)
        }
        if let token = signIn.appleRefreshToken, let identityID {
            // One token per client id: a sign-in on the web does not replace the app's token.
            try connection.executeWithNext(
                """
                INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at)
                VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND)
                ON DUPLICATE KEY UPDATE token = VALUES(token), token_key_id = VALUES(token_key_id),
                    last_validated_at = UTC_TIMESTAMP(3), next_validation_at = VALUES(next_validation_at), updated_at = UTC_TIMESTAMP(3)
                """, identityID, token.clientID, token.ciphertext, token.keyID, signIn.firstValidationIn)
        }
        let storedEmail = try storeEmail(
            signIn.email, isPrivateRelay: signIn.isPrivateEmail == true, verified: signIn.emailVerified ?? false, of: userID,
            on: connection)
        let linkedBy = placement.linkedBy ?? (transfer == nil ? nil : .teamTransfer)
        guard placement.userID == nil else { return SignedInAccount(userID: userID, isNewUser: false, linkedBy: linkedBy) }
        let profile = Profile(
            userID: userID, firstName: firstName, lastName: lastName, createdAt: UnixTime.seconds(milliseconds: createdAt),
            emails: storedEmail.map { [$0] } ?? [], externalID: placement.externalID)
        return SignedInAccount(userID: userID, isNewUser: true, newProfile: profile, linkedBy: linkedBy)
    }

    /// Stores an email address Apple gave for `userID` as given (a relay address flagged as such),
    /// updating the flags of one already stored; nothing for none, an empty one or one too long. In
    /// a transaction, the write goes with its next statement or its COMMIT.
    /// - Returns: the email as stored.
    static func storeEmail(_ address: String?, isPrivateRelay: Bool, verified: Bool, of userID: UInt64, on connection: Connection) throws
        -> Profile.Email?
    {
        guard let email = address.map({ ColumnText.trimmed($0) }), !email.isEmpty, email.utf8.count <= 320 else { return nil }
        try connection.executeWithNext(
            """
            INSERT INTO user_emails (user_id, address, is_private_relay, verified) VALUES (?, ?, ?, ?)
            ON DUPLICATE KEY UPDATE verified = VALUES(verified), is_private_relay = VALUES(is_private_relay), updated_at = UTC_TIMESTAMP(3)
            """, userID, email, isPrivateRelay, verified)
        return Profile.Email(address: email, isPrivateRelay: isPrivateRelay, forwardingEnabled: true, verified: verified)
    }

    /// A name part trimmed, without control characters, at most `maximum` code points (the
    /// unit of its column); nil when nothing is left.
    package static func sanitizedName(_ name: String?, maximum: Int = maximumNameLength) -> String? {
        guard let name else { return nil }
        let cleaned = ColumnText.trimmed(
            String(
                String.UnicodeScalarView(
                    name.unicodeScalars.filter {
                        !$0.properties.isDefaultIgnorableCodePoint && !($0.properties.generalCategory == .control)
                    })
            ), newlines: true)
        guard !cleaned.isEmpty else { return nil }
        return ColumnText.fitted(cleaned, maximum: maximum)
    }
}
