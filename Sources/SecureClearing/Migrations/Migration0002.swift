// Migration 2: what the PostgreSQL store of the clearing (PostgresClearingStore) needs beyond migration 1
// (docs/CLEARING.md §3.2, "Migration 2"). Every record keeps its keys and amounts as columns and its whole
// stored encoding in `encoded`, from which it is read back exactly. Times the rules compare are Unix
// milliseconds in `bigint` columns (`*_ms`), so that they round-trip exactly. Migration 1 held no rows
// anywhere (nothing wrote them before this store), so the new NOT NULL columns need no default.
extension ClearingSchema {
    static let migration0002 = #"""
        ALTER TABLE wallets ADD COLUMN last_sync_ms bigint;

        ALTER TABLE debits ADD COLUMN encoded bytea NOT NULL;
        ALTER TABLE credits ADD COLUMN is_redemption boolean NOT NULL;
        ALTER TABLE credits ADD COLUMN encoded bytea NOT NULL;
        ALTER TABLE matches ADD COLUMN matched_ms bigint NOT NULL;
        ALTER TABLE reversals ADD COLUMN payee bytea NOT NULL;
        ALTER TABLE reversals ADD COLUMN issuer bytea NOT NULL;
        ALTER TABLE reversals ADD COLUMN currency text NOT NULL;
        ALTER TABLE reversals ADD COLUMN units bigint NOT NULL CHECK (units >= 0);
        ALTER TABLE reversals ADD COLUMN encoded bytea NOT NULL;
        ALTER TABLE mints ADD COLUMN encoded bytea NOT NULL;
        ALTER TABLE deposits ADD COLUMN encoded bytea NOT NULL;
        ALTER TABLE listings ADD COLUMN digest bytea NOT NULL;
        ALTER TABLE cosignatures ADD COLUMN encoded bytea NOT NULL;

        CREATE TABLE confirmations (
            payer bytea NOT NULL,
            transfer_id bytea NOT NULL,
            payee bytea NOT NULL,
            receipt_digest bytea NOT NULL,
            position bigint NOT NULL CHECK (position >= 0),
            encoded bytea NOT NULL,
            PRIMARY KEY (payer, transfer_id)
        );

        CREATE TABLE inconsistencies (
            digest bytea PRIMARY KEY,
            wallet_id bytea NOT NULL,
            kind smallint NOT NULL,
            payer bytea NOT NULL,
            transfer_id bytea NOT NULL,
            encoded bytea NOT NULL
        );

        CREATE TABLE settlements (
            digest bytea PRIMARY KEY,
            wallet_id bytea NOT NULL,
            encoded bytea NOT NULL
        );

        -- The longest key-event log held per wallet (its own sync's or a counterparty's from a chunk).
        CREATE TABLE wallet_logs (
            wallet_id bytea PRIMARY KEY,
            event_count bigint NOT NULL CHECK (event_count >= 1),
            encoded bytea NOT NULL
        );

        CREATE TABLE admissions (
            wallet_id bytea PRIMARY KEY,
            admitted_ms bigint NOT NULL
        );

        -- WalletSyncState.encoded of the wallet's last accepted sync, with its size (the compare-and-set key).
        CREATE TABLE sync_states (
            wallet_id bytea PRIMARY KEY,
            size bigint NOT NULL CHECK (size >= 0),
            encoded bytea NOT NULL
        );

        -- The signed transfers of a wallet's whole payments out, in the order its syncs sent them.
        CREATE TABLE sent_transfers (
            wallet_id bytea NOT NULL,
            ordinal bigint NOT NULL CHECK (ordinal >= 0),
            signed_transfer bytea NOT NULL,
            PRIMARY KEY (wallet_id, ordinal)
        );

        -- The chunks of an open sync session, kept until the claim closes it or expires_at (Unix ms) passes.
        CREATE TABLE sync_chunks (
            wallet_id bytea NOT NULL,
            session bytea NOT NULL,
            first_position bigint NOT NULL CHECK (first_position >= 0),
            encoded bytea NOT NULL,
            expires_at bigint NOT NULL,
            PRIMARY KEY (wallet_id, session, first_position)
        );

        CREATE SEQUENCE batch_numbers AS bigint MINVALUE 1;
        """#
}
