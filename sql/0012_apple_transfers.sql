-- Team transfer (`siwa transfer`): for each Apple identity of the team that hands the app over,
-- the `transfer_sub` Apple minted for the receiving team, and once it is resolved, the receiving
-- team's identity of the same user. Every step is recorded, so a run that stops or meets refusals
-- is run again and does only what is left.
CREATE TABLE IF NOT EXISTS apple_transfers (
    -- The sending team's identity.
    identity_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    target_team_id VARCHAR(16) NOT NULL,
    transfer_sub VARCHAR(255) NULL,
    minted_at DATETIME(3) NULL,
    -- The receiving team's identity of the same user, once known.
    resolved_identity_id BIGINT UNSIGNED NULL,
    resolved_at DATETIME(3) NULL,
    -- Calls to Apple for this row that failed, and the last refusal.
    failures INT UNSIGNED NOT NULL DEFAULT 0,
    last_error VARCHAR(255) NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3),
    UNIQUE KEY apple_transfers_sub (transfer_sub),
    KEY apple_transfers_target (target_team_id, resolved_at),
    CONSTRAINT apple_transfers_identity_fk FOREIGN KEY (identity_id) REFERENCES apple_identities (id) ON DELETE CASCADE,
    CONSTRAINT apple_transfers_resolved_fk FOREIGN KEY (resolved_identity_id) REFERENCES apple_identities (id) ON DELETE SET NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
