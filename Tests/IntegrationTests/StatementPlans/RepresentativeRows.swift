import MariaDB

/// Rows for every table that grows with users, in the proportions of a running service, so that
/// the optimizer's statistics (`ANALYZE TABLE`) make it choose the plans it would choose at scale:
/// a lookup that has an index uses it, one that has none scans. Generated in SQL from the
/// Sequence engine's `seq_1_to_N` tables, in a few seconds.
///
/// The shape is a service's steady state: most sessions, nonces, sign-ins and link tokens are
/// still live and few are past their purge; most deliveries and revocations are done and few
/// pending; most sync records live and one in ten a tombstone; the audit log, the webhook log and
/// Apple's notifications span their retention. A purge or claim that finds little to do then
/// reads little, as it does in production, unless it has no index for its condition.
enum RepresentativeRows {
    /// Users; every other table is sized from it (sessions 3 per user, sync records 10, ...).
    static let users = 5_000

    /// Fills the migrated schema `connection` uses, and analyzes every table.
    static func fill(on connection: Connection) throws {
        let users = users
        let statements: [String] = [
            // Users: one in twenty a guest (half of them older than a month), one in ten linked to
            // an older backend's id.
            """
            INSERT INTO users (id, first_name, last_name, created_at, updated_at, sync_version, guest_since, external_id)
            SELECT seq, CONCAT('First', seq), CONCAT('Last', seq), UTC_TIMESTAMP(3) - INTERVAL seq MOD 700 DAY, UTC_TIMESTAMP(3),
                seq MOD 50, IF(seq MOD 20 = 0, UTC_TIMESTAMP(3) - INTERVAL seq MOD 60 DAY, NULL), IF(seq MOD 10 = 3, CONCAT('ext-', seq), NULL)
            FROM seq_1_to_\(users)
            """,
            """
            INSERT INTO apple_identities (id, user_id, team_id, sub, audience, created_at)
            SELECT seq, seq, IF(seq MOD 10 = 0, 'OLDTEAM001', 'TEAMID0001'), CONCAT('000', seq, '.0f1e2d3c4b5a.', seq MOD 97),
                'com.example.app', UTC_TIMESTAMP(3) - INTERVAL seq MOD 700 DAY
            FROM seq_1_to_\(users) WHERE seq MOD 20 <> 0
            """,
            """
            INSERT INTO user_emails (user_id, address, is_private_relay, verified)
            SELECT seq, CONCAT('u', seq, IF(seq MOD 2 = 0, '@privaterelay.appleid.com', '@example.com')), seq MOD 2 = 0, 1
            FROM seq_1_to_\(users) WHERE seq MOD 20 <> 0
            """,
            // Apple's tokens: validated daily, so due times spread over the day; one in a thousand due now.
            """
            INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at)
            SELECT id, 'com.example.app', RANDOM_BYTES(64), 'k1',
                IF(id MOD 1000 = 1, UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE, UTC_TIMESTAMP(3) + INTERVAL id MOD 86400 SECOND)
            FROM apple_identities
            """,
            // Sessions: three per user, one of them revoked (its expiry is its revocation), one in six a
            // browser's (a cookie); ended within the 30 days they are kept.
            """
            INSERT INTO sessions (id, user_id, apple_client_id, device, cookie_hash, created_at, last_used_at, expires_at, revoked_at,
                revoke_reason)
            SELECT seq, (seq - 1) MOD \(users) + 1, 'com.example.app', 'iPhone', IF(seq MOD 6 = 1, UNHEX(SHA2(CONCAT('c', seq), 256)), NULL),
                UTC_TIMESTAMP(3) - INTERVAL seq MOD 90 DAY, UTC_TIMESTAMP(3) - INTERVAL seq MOD 30 DAY,
                IF(seq MOD 3 = 0, UTC_TIMESTAMP(3) - INTERVAL seq MOD 20 DAY, UTC_TIMESTAMP(3) + INTERVAL 30 DAY - INTERVAL seq MOD 40 DAY),
                IF(seq MOD 3 = 0, UTC_TIMESTAMP(3) - INTERVAL seq MOD 20 DAY, NULL),
                IF(seq MOD 3 = 0, 'user', NULL)
            FROM seq_1_to_\(users * 3)
            """,
            // Refresh tokens: the current one and the one spent before it, per session.
            """
            INSERT INTO refresh_tokens (token_hash, session_id, issued_at, spent_at)
            SELECT UNHEX(SHA2(CONCAT('r', seq), 256)), (seq - 1) MOD \(users * 3) + 1, UTC_TIMESTAMP(3) - INTERVAL seq MOD 30 DAY,
                IF(seq > \(users * 3), UTC_TIMESTAMP(3) - INTERVAL seq MOD 30 DAY, NULL)
            FROM seq_1_to_\(users * 6)
            """,
            // Nonces live ten minutes; the purge runs every few minutes.
            """
            INSERT INTO used_nonces (nonce_hash, expires_at)
            SELECT UNHEX(SHA2(CONCAT('n', seq), 256)), UTC_TIMESTAMP(3) - INTERVAL 20 SECOND + INTERVAL seq MOD 600 SECOND FROM seq_1_to_\(users)
            """,
            """
            INSERT INTO web_sign_ins (state_hash, binding_hash, nonce, return_to, expires_at, handle_hash, user_id, completed_at,
                consumed_at, app_client_id, code_hash, code_expires_at)
            SELECT UNHEX(SHA2(CONCAT('s', seq), 256)), UNHEX(SHA2(CONCAT('b', seq), 256)), CONCAT('nonce', seq), '/',
                UTC_TIMESTAMP(3) - INTERVAL 30 SECOND + INTERVAL seq MOD 600 SECOND, IF(seq MOD 2 = 0, UNHEX(SHA2(CONCAT('h', seq), 256)), NULL),
                IF(seq MOD 2 = 0, seq MOD \(users) + 1, NULL), IF(seq MOD 2 = 0, UTC_TIMESTAMP(3), NULL),
                IF(seq MOD 4 = 0, UTC_TIMESTAMP(3), NULL), IF(seq MOD 8 = 0, 'app', NULL),
                IF(seq MOD 8 = 0, UNHEX(SHA2(CONCAT('code', seq), 256)), NULL), IF(seq MOD 8 = 0, UTC_TIMESTAMP(3), NULL)
            FROM seq_1_to_\(users / 2)
            """,
            // Revocations: kept 30 days once done; a few pending.
            """
            INSERT INTO apple_revocations (client_id, token, token_key_id, token_type_hint, created_at, attempts, next_attempt_at, done_at)
            SELECT 'com.example.app', '', 'k1', 'refresh_token', UTC_TIMESTAMP(3) - INTERVAL seq MOD 29 DAY, 1,
                UTC_TIMESTAMP(3) - INTERVAL seq MOD 29 DAY, IF(seq MOD 100 = 0, NULL, UTC_TIMESTAMP(3) - INTERVAL seq MOD 29 DAY)
            FROM seq_1_to_\(users / 5)
            """,
            """
            INSERT INTO apple_notifications (jti, event_type, sub_hash, audience, received_at, processed_at, outcome)
            SELECT CONCAT('jti-', seq), 'consent-revoked', UNHEX(SHA2(seq, 256)), 'com.example.app',
                UTC_TIMESTAMP(3) - INTERVAL seq MOD 29 DAY, UTC_TIMESTAMP(3) - INTERVAL seq MOD 29 DAY, 'processed'
            FROM seq_1_to_\(users / 2)
            """,
            // The audit log: five events per user within its retention (90 days by default).
            """
            INSERT INTO audit_events (occurred_at, event_type, user_id, session_id, remote_address)
            SELECT UTC_TIMESTAMP(3) - INTERVAL seq MOD 88 DAY - INTERVAL seq MOD 86400 SECOND,
                ELT(seq MOD 4 + 1, 'sign_in', 'refresh_token_reuse', 'account_exported', 'session_revoked'), (seq - 1) MOD \(users) + 1,
                seq MOD \(users * 3) + 1, '192.0.2.1'
            FROM seq_1_to_\(users * 5)
            """,
            // Lifecycle webhooks: two events per user within the 30 days kept, to one endpoint;
            // one in a hundred pending.
            """
            INSERT INTO webhook_events (id, public_id, event_type, user_id, body, created_at)
            SELECT seq, CONCAT('evt_', LPAD(HEX(seq), 32, '0')), 'session.revoked', (seq - 1) MOD \(users) + 1, '{}',
                UTC_TIMESTAMP(3) - INTERVAL seq MOD 29 DAY
            FROM seq_1_to_\(users * 2)
            """,
            """
            INSERT INTO webhook_deliveries (event_id, endpoint, user_id, state, attempts, next_attempt_at, pending_since, delivered_at)
            SELECT id, 'https://hooks.example.com/siwa', user_id, IF(id MOD 100 = 0, 'pending', 'delivered'), 1,
                created_at + INTERVAL 1 SECOND, created_at, IF(id MOD 100 = 0, NULL, created_at + INTERVAL 1 SECOND)
            FROM webhook_events
            """,
            """
            INSERT INTO webhook_attempts (event_id, endpoint, attempted_at, status, duration_ms)
            SELECT event_id, endpoint, next_attempt_at, 200, 12 FROM webhook_deliveries
            """,
            // The revocation log keeps an hour.
            """
            INSERT INTO session_revocations (user_id, session_id, revoked_at)
            SELECT (seq - 1) MOD \(users) + 1, seq, UTC_TIMESTAMP(3) - INTERVAL seq MOD 3600 SECOND FROM seq_1_to_\(users / 2)
            """,
            """
            INSERT INTO link_tokens (token_hash, external_id, created_at, expires_at, used_at)
            SELECT UNHEX(SHA2(CONCAT('l', seq), 256)), CONCAT('ext-', seq), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL seq MOD 3600 SECOND,
                IF(seq MOD 2 = 0, UTC_TIMESTAMP(3), NULL)
            FROM seq_1_to_\(users / 10)
            """,
            // A team transfer under way: the old team's identities, half of them minted.
            """
            INSERT INTO apple_transfers (identity_id, target_team_id, transfer_sub, minted_at)
            SELECT id, 'TEAMID0001', IF(id MOD 40 = 10, CONCAT('tsub-', id), NULL), IF(id MOD 40 = 10, UTC_TIMESTAMP(3), NULL)
            FROM apple_identities WHERE team_id = 'OLDTEAM001'
            """,
            // Sync: ten records per user in four collections, one in ten a tombstone, deleted within
            // the last 29 days: what a purge after 28 days leaves (the tour purges after 27).
            """
            INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version)
            SELECT u.seq, ELT(r.seq MOD 4 + 1, 'lessons', 'badges', 'notes', 'settings'), CONCAT('item-', r.seq), REPEAT('x', 60),
                r.seq = 7, IF(r.seq = 7, UTC_TIMESTAMP(3) - INTERVAL u.seq MOD 29 DAY, NULL), u.seq MOD 50
            FROM seq_1_to_\(users) u JOIN seq_1_to_10 r
            """,
        ]
        // Every row is made to satisfy the keys: the checks are off while they are written.
        try connection.run("SET SESSION foreign_key_checks = 0, unique_checks = 0")
        for statement in statements {
            try connection.run("\(raw: statement)")
        }
        try connection.run("SET SESSION foreign_key_checks = 1, unique_checks = 1")
        let tables: [String] = try connection.query(
            "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME"
        ).map { try $0.decode(column: "name") }
        try connection.run("ANALYZE TABLE \(raw: tables.joined(separator: ", "))")
    }
}
