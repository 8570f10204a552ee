// Migration 1: the schema of docs/CLEARING.md §3.2. Embedded as a string, not a resource file, so that the
// `secure-clearing` binary is self-contained. Once released, a migration never changes: a change is a new one.
//
// Conventions: ids, digests and encodings are `bytea`; money is `bigint` minor units with CHECK (>= 0), never
// `numeric` or a float; positions, sizes and counts are `bigint` >= 0; small enumerations (`form`, `kind`,
// `type`, `grounds`) are `smallint`. Keys and UNIQUE constraints are exactly the table's in §3.2.
extension ClearingSchema {
    static let migration0001 = #"""
        CREATE TABLE wallets (
            wallet_id bytea PRIMARY KEY,
            is_issuer boolean NOT NULL DEFAULT false,
            log bytea,
            log_sequence bigint CHECK (log_sequence >= 0),
            admitted_at timestamptz,
            last_sync_at timestamptz,
            cosigned_size bigint NOT NULL DEFAULT 0 CHECK (cosigned_size >= 0),
            cosigned_checkpoint bytea,
            compact_range bytea,
            head bytea,
            last_time bigint,
            balances bytea
        );

        -- form 0: the whole entry (encoded); form 1: opaque (id, delta, leaf_hash), docs/CLEARING.md §2.2.
        CREATE TABLE entries (
            wallet_id bytea NOT NULL,
            position bigint NOT NULL CHECK (position >= 0),
            form smallint NOT NULL CHECK (form IN (0, 1)),
            encoded bytea,
            id bytea,
            delta bigint,
            leaf_hash bytea,
            PRIMARY KEY (wallet_id, position),
            CHECK ((form = 0 AND encoded IS NOT NULL) OR (form = 1 AND id IS NOT NULL AND leaf_hash IS NOT NULL))
        );

        CREATE TABLE statements (
            wallet_id bytea NOT NULL,
            signer bytea NOT NULL,
            statement_id bytea NOT NULL,
            kind smallint NOT NULL,
            digest bytea NOT NULL,
            position bigint NOT NULL CHECK (position >= 0),
            PRIMARY KEY (wallet_id, signer, statement_id)
        );

        CREATE TABLE payments_out (
            wallet_id bytea NOT NULL,
            transfer_id bytea NOT NULL,
            issuer bytea NOT NULL,
            currency text NOT NULL,
            units bigint NOT NULL CHECK (units >= 0),
            position bigint NOT NULL CHECK (position >= 0),
            reversed boolean NOT NULL DEFAULT false,
            confirmed boolean NOT NULL DEFAULT false,
            signed_transfer bytea NOT NULL,
            PRIMARY KEY (wallet_id, transfer_id)
        );

        CREATE TABLE debits (
            payer bytea NOT NULL,
            transfer_id bytea NOT NULL,
            payee bytea NOT NULL,
            issuer bytea NOT NULL,
            currency text NOT NULL,
            units bigint NOT NULL CHECK (units >= 0),
            transfer_digest bytea NOT NULL,
            position bigint NOT NULL CHECK (position >= 0),
            PRIMARY KEY (payer, transfer_id)
        );

        CREATE TABLE credits (
            payer bytea NOT NULL,
            transfer_id bytea NOT NULL,
            payee bytea NOT NULL,
            issuer bytea NOT NULL,
            currency text NOT NULL,
            units bigint NOT NULL CHECK (units >= 0),
            transfer_digest bytea NOT NULL,
            position bigint NOT NULL CHECK (position >= 0),
            payer_checkpoint bytea,
            PRIMARY KEY (payer, transfer_id)
        );

        CREATE TABLE matches (
            payer bytea NOT NULL,
            transfer_id bytea NOT NULL,
            matched_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (payer, transfer_id)
        );

        CREATE TABLE reversals (
            payer bytea NOT NULL,
            transfer_id bytea NOT NULL,
            refusal bytea NOT NULL,
            PRIMARY KEY (payer, transfer_id)
        );

        CREATE TABLE mints (
            issuer bytea NOT NULL,
            voucher_id bytea NOT NULL,
            recipient bytea NOT NULL,
            currency text NOT NULL,
            units bigint NOT NULL CHECK (units >= 0),
            PRIMARY KEY (issuer, voucher_id)
        );

        CREATE TABLE deposits (
            issuer bytea NOT NULL,
            voucher_id bytea NOT NULL,
            recipient bytea NOT NULL,
            currency text NOT NULL,
            units bigint NOT NULL CHECK (units >= 0),
            PRIMARY KEY (issuer, voucher_id)
        );

        CREATE TABLE held_checkpoints (
            wallet_id bytea NOT NULL,
            size bigint NOT NULL CHECK (size >= 0),
            checkpoint_digest bytea NOT NULL,
            encoded bytea NOT NULL,
            source bytea NOT NULL,
            PRIMARY KEY (wallet_id, size, checkpoint_digest)
        );

        CREATE TABLE evidence (
            digest bytea PRIMARY KEY,
            accused bytea NOT NULL,
            type smallint NOT NULL,
            encoded bytea NOT NULL
        );

        CREATE TABLE claims (
            wallet_id bytea NOT NULL,
            from_size bigint NOT NULL CHECK (from_size >= 0),
            to_size bigint NOT NULL CHECK (to_size >= from_size),
            signed bytea NOT NULL,
            opaque_map bytea NOT NULL,
            PRIMARY KEY (wallet_id, from_size)
        );

        CREATE TABLE sync_sessions (
            wallet_id bytea NOT NULL,
            session bytea NOT NULL,
            next_position bigint NOT NULL CHECK (next_position >= 0),
            expires_at timestamptz NOT NULL,
            PRIMARY KEY (wallet_id, session)
        );

        CREATE TABLE batches (
            batch bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            signed_head bytea NOT NULL
        );

        CREATE TABLE cosignatures (
            wallet_id bytea NOT NULL,
            batch bigint NOT NULL,
            leaf_index bigint NOT NULL CHECK (leaf_index >= 0),
            proof bytea NOT NULL,
            PRIMARY KEY (wallet_id, batch)
        );

        CREATE TABLE list_increments (
            issuer bytea NOT NULL,
            version bigint NOT NULL CHECK (version >= 0),
            increment bytea NOT NULL,
            digest bytea NOT NULL,
            signed_at timestamptz NOT NULL,
            PRIMARY KEY (issuer, version)
        );

        CREATE TABLE listings (
            wallet_id bytea NOT NULL,
            grounds smallint NOT NULL,
            PRIMARY KEY (wallet_id, grounds)
        );

        -- subject: a wallet id in hex or a client address; window_start: the start of the quota's window.
        CREATE TABLE quotas (
            subject text NOT NULL,
            window_start timestamptz NOT NULL,
            requests bigint NOT NULL CHECK (requests >= 0),
            bytes bigint NOT NULL CHECK (bytes >= 0),
            PRIMARY KEY (subject, window_start)
        );
        """#
}
