import Foundation
import SecureCore
import SecureCrypto

/// The clearing's records in PostgreSQL (docs/CLEARING.md §3.2): the tables of migrations 1 and 2 behind the
/// same "insert if absent, tell me whether I did" contract as `InMemoryClearingStore`. Safe from many threads
/// (each transaction borrows its own pooled connection) and from several processes against one database: every
/// write is `INSERT … ON CONFLICT (key) DO NOTHING RETURNING 1`, and a transaction locks its wallets' rows in
/// wallet-id order, so two writers of one key never both win and never wait for each other in a cycle.
public final class PostgresClearingStore: ClearingStore, @unchecked Sendable {
    /// The connections.
    public let pool: PostgresPool
    /// The issuer whose clearing this is: the key of its `list_increments` rows.
    public let issuer: WalletID

    /// How often a transaction runs again after a serialization failure or a deadlock (40001, 40P01). Lock
    /// order rules out deadlocks among the wallet rows; a log row two syncs both extend can still make one.
    public static let transactionAttempts = 5

    /// A store over `pool`, for `issuer`'s clearing. The database must be migrated (`ClearingSchema.migrate`).
    public init(pool: PostgresPool, issuer: WalletID) {
        self.pool = pool
        self.issuer = issuer
    }

    /// One transaction of the store on one pooled connection; only valid inside `transaction(locking:_:)`.
    public final class Transaction: ClearingTransaction, ClearingSyncTransaction {
        let connection: PostgresConnection

        init(_ connection: PostgresConnection) { self.connection = connection }

        // MARK: inserts

        /// Runs an `… ON CONFLICT DO NOTHING RETURNING 1`; when no row returns, compares the stored row's
        /// `encoded` with `same`.
        private func insert(
            _ sql: String, _ parameters: [PostgresValue], existing: String, _ key: [PostgresValue],
            same: ([UInt8]) throws -> Bool
        ) throws -> InsertResult {
            if try !connection.query(sql, parameters).rows.isEmpty { return .inserted }
            guard let row = try connection.query(existing, key).rows.first else {
                // The conflicting row was deleted between the two statements: nothing in the clearing deletes
                // these rows, so this is a broken database.
                throw PostgresError(.unexpectedResult, "a conflicting row vanished: \(existing)")
            }
            return try same(try row.bytes("encoded")) ? .existedEqual : .existedDifferent
        }

        private static func key(_ key: TransferKey) -> [PostgresValue] {
            [.bytea(key.payer.bytes), .bytea(key.transferID.bytes)]
        }

        private static func amount(_ amount: AssetAmount) -> [PostgresValue] {
            [.bytea(amount.issuer.bytes), .text(amount.currency.code), .int8(amount.money.minorUnits)]
        }

        public func insertDebit(_ record: DebitRecord) throws -> InsertResult {
            try insert(
                """
                INSERT INTO debits (payer, transfer_id, payee, issuer, currency, units, transfer_digest, position,
                    encoded) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (payer, transfer_id) DO NOTHING
                RETURNING 1 AS inserted
                """,
                Self.key(record.key) + [.bytea(record.payee.bytes)] + Self.amount(record.amount)
                    + [.bytea(record.transferDigest.bytes), .int8(Int64(record.position)), .bytea(record.rowEncoded)],
                existing: "SELECT encoded FROM debits WHERE payer = $1 AND transfer_id = $2", Self.key(record.key)
            ) { try DebitRecord.decodeRow($0).sameContent(record) }
        }

        public func insertCredit(_ record: CreditRecord) throws -> InsertResult {
            try insert(
                """
                INSERT INTO credits (payer, transfer_id, payee, issuer, currency, units, transfer_digest, position,
                    payer_checkpoint, is_redemption, encoded) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                ON CONFLICT (payer, transfer_id) DO NOTHING RETURNING 1 AS inserted
                """,
                Self.key(record.key) + [.bytea(record.payee.bytes)] + Self.amount(record.amount)
                    + [
                        .bytea(record.transferDigest.bytes), .int8(Int64(record.position)),
                        .bytea(record.payerCheckpoint.encoded), .bool(record.isRedemption), .bytea(record.rowEncoded),
                    ],
                existing: "SELECT encoded FROM credits WHERE payer = $1 AND transfer_id = $2", Self.key(record.key)
            ) { try CreditRecord.decodeRow($0).sameContent(record) }
        }

        public func insertReversal(_ record: ReversalRecord) throws -> InsertResult {
            try insert(
                """
                INSERT INTO reversals (payer, transfer_id, payee, issuer, currency, units, refusal, encoded)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (payer, transfer_id) DO NOTHING
                RETURNING 1 AS inserted
                """,
                Self.key(record.key) + [.bytea(record.payee.bytes)] + Self.amount(record.amount)
                    + [.bytea(record.refusal.encoded), .bytea(record.rowEncoded)],
                existing: "SELECT encoded FROM reversals WHERE payer = $1 AND transfer_id = $2", Self.key(record.key)
            ) { try ReversalRecord.decodeRow($0).sameContent(record) }
        }

        public func insertConfirmation(_ record: ConfirmationRecord) throws -> InsertResult {
            try insert(
                """
                INSERT INTO confirmations (payer, transfer_id, payee, receipt_digest, position, encoded)
                VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (payer, transfer_id) DO NOTHING RETURNING 1 AS inserted
                """,
                Self.key(record.key)
                    + [
                        .bytea(record.payee.bytes), .bytea(record.receiptDigest.bytes), .int8(Int64(record.position)),
                        .bytea(record.rowEncoded),
                    ],
                existing: "SELECT encoded FROM confirmations WHERE payer = $1 AND transfer_id = $2",
                Self.key(record.key)
            ) { try ConfirmationRecord.decodeRow($0) == record }
        }

        private func insertVoucher(_ record: VoucherRecord, table: String) throws -> InsertResult {
            let key: [PostgresValue] = [.bytea(record.key.issuer.bytes), .bytea(record.key.voucherID.bytes)]
            return try insert(
                """
                INSERT INTO \(table) (issuer, voucher_id, recipient, currency, units, encoded)
                VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (issuer, voucher_id) DO NOTHING RETURNING 1 AS inserted
                """,
                key
                    + [
                        .bytea(record.recipient.bytes), .text(record.amount.currency.code),
                        .int8(record.amount.money.minorUnits), .bytea(record.rowEncoded),
                    ],
                existing: "SELECT encoded FROM \(table) WHERE issuer = $1 AND voucher_id = $2", key
            ) { try VoucherRecord.decodeRow($0) == record }
        }

        public func insertMint(_ record: VoucherRecord) throws -> InsertResult {
            try insertVoucher(record, table: "mints")
        }

        public func insertDeposit(_ record: VoucherRecord) throws -> InsertResult {
            try insertVoucher(record, table: "deposits")
        }

        public func insertMatch(_ key: TransferKey, time: Int64) throws -> InsertResult {
            let inserted = try connection.query(
                """
                INSERT INTO matches (payer, transfer_id, matched_ms) VALUES ($1, $2, $3)
                ON CONFLICT (payer, transfer_id) DO NOTHING RETURNING 1 AS inserted
                """, Self.key(key) + [.int8(time)])
            // The match's only content is when it was written: a second writer finds the key and writes nothing.
            return inserted.rows.isEmpty ? .existedEqual : .inserted
        }

        public func insertHeldCheckpoint(_ held: HeldCheckpoint) throws -> InsertResult {
            let inserted = try connection.query(
                """
                INSERT INTO held_checkpoints (wallet_id, size, checkpoint_digest, encoded, source)
                VALUES ($1, $2, $3, $4, $5) ON CONFLICT (wallet_id, size, checkpoint_digest) DO NOTHING
                RETURNING 1 AS inserted
                """,
                [
                    .bytea(held.wallet.bytes), .int8(Int64(held.size)), .bytea(held.digest.bytes),
                    .bytea(held.checkpoint.encoded), .bytea(held.source.rowEncoded),
                ])
            // Equal keys are equal content (the digest is of the checkpoint).
            return inserted.rows.isEmpty ? .existedEqual : .inserted
        }

        public func insertEvidence(_ record: EvidenceRecord) throws -> InsertResult {
            let encoded = record.evidence.encoded
            let digest: [PostgresValue] = [.bytea(record.digest.bytes)]
            return try insert(
                """
                INSERT INTO evidence (digest, accused, type, encoded) VALUES ($1, $2, $3, $4)
                ON CONFLICT (digest) DO NOTHING RETURNING 1 AS inserted
                """,
                digest + [.bytea(record.accused.bytes), .int4(Int32(encoded[1])), .bytea(encoded)],
                existing: "SELECT encoded FROM evidence WHERE digest = $1", digest
            ) { $0 == encoded }
        }

        public func insertInconsistency(_ record: InconsistencyRecord) throws -> InsertResult {
            let digest: [PostgresValue] = [.bytea(record.digest.bytes)]
            let encoded = record.rowEncoded
            return try insert(
                """
                INSERT INTO inconsistencies (digest, wallet_id, kind, payer, transfer_id, encoded)
                VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO NOTHING RETURNING 1 AS inserted
                """,
                digest
                    + [.bytea(record.wallet.bytes), .int4(Int32(record.kind.rawValue))] + Self.key(record.key)
                    + [.bytea(encoded)],
                existing: "SELECT encoded FROM inconsistencies WHERE digest = $1", digest
            ) { $0 == encoded }
        }

        // MARK: reads

        private func one(_ sql: String, _ parameters: [PostgresValue]) throws -> [UInt8]? {
            try connection.query(sql, parameters).rows.first.map { try $0.bytes("encoded") }
        }

        public func debit(_ key: TransferKey) throws -> DebitRecord? {
            try one("SELECT encoded FROM debits WHERE payer = $1 AND transfer_id = $2", Self.key(key))
                .map(DebitRecord.decodeRow)
        }

        public func credit(_ key: TransferKey) throws -> CreditRecord? {
            try one("SELECT encoded FROM credits WHERE payer = $1 AND transfer_id = $2", Self.key(key))
                .map(CreditRecord.decodeRow)
        }

        public func reversal(_ key: TransferKey) throws -> ReversalRecord? {
            try one("SELECT encoded FROM reversals WHERE payer = $1 AND transfer_id = $2", Self.key(key))
                .map(ReversalRecord.decodeRow)
        }

        public func isMatched(_ key: TransferKey) throws -> Bool {
            try !connection.query("SELECT 1 AS one FROM matches WHERE payer = $1 AND transfer_id = $2", Self.key(key))
                .rows.isEmpty
        }

        public func heldCheckpoints(wallet: WalletID, size: UInt64) throws -> [HeldCheckpoint] {
            try connection.query(
                """
                SELECT encoded, source FROM held_checkpoints WHERE wallet_id = $1 AND size = $2
                ORDER BY checkpoint_digest
                """, [.bytea(wallet.bytes), .int8(Int64(size))]
            ).rows.map { row in
                HeldCheckpoint(
                    checkpoint: try PostgresClearingStore.decoded(
                        { try SignedCheckpoint.decode($0) }, try row.bytes("encoded")),
                    source: try HeldCheckpointSource.decodeRow(try row.bytes("source")))
            }
        }

        public func wallet(_ id: WalletID) throws -> WalletRow? {
            try connection.query(
                """
                SELECT wallet_id, last_sync_ms, cosigned_checkpoint FROM wallets
                WHERE wallet_id = $1 AND cosigned_checkpoint IS NOT NULL
                """, [.bytea(id.bytes)]
            ).rows.first.map(PostgresClearingStore.walletRow)
        }

        public func setWallet(_ row: WalletRow) throws {
            try connection.query(
                """
                INSERT INTO wallets (wallet_id, last_sync_ms, cosigned_size, cosigned_checkpoint)
                VALUES ($1, $2, $3, $4) ON CONFLICT (wallet_id) DO UPDATE SET last_sync_ms = EXCLUDED.last_sync_ms,
                    cosigned_size = EXCLUDED.cosigned_size, cosigned_checkpoint = EXCLUDED.cosigned_checkpoint
                """,
                [
                    .bytea(row.walletID.bytes), .int8(row.lastSyncAt), .int8(Int64(row.cosigned.checkpoint.size)),
                    .bytea(row.cosigned.encoded),
                ])
        }

        // MARK: ClearingSyncTransaction

        public func log(_ wallet: WalletID) throws -> KeyEventLog? {
            try one("SELECT encoded FROM wallet_logs WHERE wallet_id = $1", [.bytea(wallet.bytes)])
                .map(KeyEventLog.decodeRow)
        }

        public func keepLog(_ log: KeyEventLog) throws {
            try connection.query(
                """
                INSERT INTO wallet_logs (wallet_id, event_count, encoded) VALUES ($1, $2, $3)
                ON CONFLICT (wallet_id) DO UPDATE SET event_count = EXCLUDED.event_count, encoded = EXCLUDED.encoded
                WHERE wallet_logs.event_count < EXCLUDED.event_count
                """, [.bytea(log.walletID.bytes), .int8(Int64(log.events.count)), .bytea(log.rowEncoded)])
        }

        public func isAdmitted(_ wallet: WalletID) throws -> Bool {
            try !connection.query("SELECT 1 AS one FROM admissions WHERE wallet_id = $1", [.bytea(wallet.bytes)])
                .rows.isEmpty
        }

        public func admit(_ wallet: WalletID, time: Int64) throws {
            try connection.query(
                "INSERT INTO admissions (wallet_id, admitted_ms) VALUES ($1, $2) ON CONFLICT (wallet_id) DO NOTHING",
                [.bytea(wallet.bytes), .int8(time)])
        }

        public func mint(_ key: VoucherKey) throws -> VoucherRecord? {
            try one(
                "SELECT encoded FROM mints WHERE issuer = $1 AND voucher_id = $2",
                [.bytea(key.issuer.bytes), .bytea(key.voucherID.bytes)]
            ).map(VoucherRecord.decodeRow)
        }

        public func syncState(_ wallet: WalletID) throws -> WalletSyncState? {
            try one("SELECT encoded FROM sync_states WHERE wallet_id = $1", [.bytea(wallet.bytes)]).map {
                try PostgresClearingStore.decoded(WalletSyncState.decode, $0)
            }
        }

        public func replaceSyncState(_ state: WalletSyncState, expectedSize: UInt64) throws -> Bool {
            // One statement, a compare-and-set on the stored size: right even without the wallet's row lock.
            let parameters: [PostgresValue] = [
                .bytea(state.walletID.bytes), .int8(Int64(state.size)), .bytea(state.encoded),
                .int8(Int64(expectedSize)),
            ]
            let result =
                expectedSize == 0
                ? try connection.query(
                    """
                    INSERT INTO sync_states (wallet_id, size, encoded) SELECT $1, $2, $3 WHERE $4 = 0
                    ON CONFLICT (wallet_id) DO NOTHING RETURNING 1 AS replaced
                    """, parameters)
                : try connection.query(
                    "UPDATE sync_states SET size = $2, encoded = $3 WHERE wallet_id = $1 AND size = $4 RETURNING 1 AS replaced",
                    parameters)
            return !result.rows.isEmpty
        }

        public func history(_ wallet: WalletID) throws -> SyncHistory {
            let id: [PostgresValue] = [.bytea(wallet.bytes)]
            let entries = try connection.query(
                "SELECT encoded FROM entries WHERE wallet_id = $1 ORDER BY position", id
            ).rows.map { try SyncEntry.decodeRow(try $0.bytes("encoded")) }
            let claims = try connection.query(
                "SELECT signed, opaque_map FROM claims WHERE wallet_id = $1 ORDER BY from_size", id
            ).rows.map { row in
                ClaimedMap(
                    claim: try PostgresClearingStore.decoded(SignedSyncClaim.decode, try row.bytes("signed")),
                    map: try PostgresClearingStore.decoded(OpaqueMap.decode, try row.bytes("opaque_map")))
            }
            let transfers = try connection.query(
                "SELECT signed_transfer FROM sent_transfers WHERE wallet_id = $1 ORDER BY ordinal", id
            ).rows.map { try PostgresClearingStore.decoded(SignedTransfer.decode, try $0.bytes("signed_transfer")) }
            return SyncHistory(entries: entries, claims: claims, sentTransfers: transfers)
        }

        public func appendHistory(
            _ wallet: WalletID, entries: [SyncEntry], claim: ClaimedMap, transfers: [SignedTransfer]
        ) throws {
            let id = PostgresValue.bytea(wallet.bytes)
            for entry in entries {
                let opaque: (StatementID, Digest32)? =
                    if case .opaque(let leaf) = entry { (leaf.id, leaf.leafHash) } else { nil }
                try connection.query(
                    "INSERT INTO entries (wallet_id, position, form, encoded, id, leaf_hash) VALUES ($1, $2, $3, $4, $5, $6)",
                    [
                        id, .int8(Int64(entry.position)), .int4(opaque == nil ? 0 : 1), .bytea(entry.rowEncoded),
                        opaque.map { .bytea($0.0.bytes) } ?? .null, opaque.map { .bytea($0.1.bytes) } ?? .null,
                    ])
            }
            let payload = claim.claim.payload
            try connection.query(
                "INSERT INTO claims (wallet_id, from_size, to_size, signed, opaque_map) VALUES ($1, $2, $3, $4, $5)",
                [
                    id, .int8(Int64(payload.fromSize)), .int8(Int64(payload.toSize)), .bytea(claim.claim.encoded),
                    .bytea(claim.map.encoded),
                ])
            let next = try connection.query(
                "SELECT coalesce(max(ordinal) + 1, 0)::int8 AS next FROM sent_transfers WHERE wallet_id = $1", [id])
            var ordinal = try next.rows.first?.int64("next") ?? 0
            for transfer in transfers {
                try connection.query(
                    "INSERT INTO sent_transfers (wallet_id, ordinal, signed_transfer) VALUES ($1, $2, $3)",
                    [id, .int8(ordinal), .bytea(transfer.encoded)])
                ordinal += 1
            }
        }
    }

    // MARK: transactions

    /// Orders wallet ids as PostgreSQL orders `bytea`: bytewise.
    static func lockOrder(_ wallets: [WalletID]) -> [WalletID] {
        Set(wallets).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    /// One pooled connection: a `wallets` row is made for each wallet that lacks one (each insert its own short
    /// transaction, in wallet-id order), then one READ COMMITTED transaction locks the rows in wallet-id order
    /// (`SELECT … FOR UPDATE`), runs `body`, and commits; it rolls back when `body` throws, and runs again on a
    /// serialization failure or deadlock (`transactionAttempts`), so `body` must only talk to the transaction.
    public func transaction<Result>(locking wallets: [WalletID], _ body: (Transaction) throws -> Result) throws
        -> Result
    {
        let ordered = Self.lockOrder(wallets)
        return try pool.withConnection { connection in
            for wallet in ordered {
                try connection.query(
                    "INSERT INTO wallets (wallet_id) VALUES ($1) ON CONFLICT (wallet_id) DO NOTHING",
                    [.bytea(wallet.bytes)])
            }
            return try connection.transaction(attempts: Self.transactionAttempts) {
                for wallet in ordered {
                    try connection.query(
                        "SELECT wallet_id FROM wallets WHERE wallet_id = $1 FOR UPDATE", [.bytea(wallet.bytes)])
                }
                return try body(Transaction(connection))
            }
        }
    }

    /// One statement outside any wallet lock, in its own transaction.
    private func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresResult {
        try pool.withConnection { try $0.query(sql, parameters) }
    }

    /// Decodes stored bytes that a decoder reports short as a broken row.
    static func decoded<T>(_ decode: ([UInt8]) throws -> T?, _ bytes: [UInt8]) throws -> T {
        guard let value = try decode(bytes) else {
            throw PostgresError(.unexpectedResult, "a stored \(T.self) is truncated")
        }
        return value
    }

    static func walletRow(_ row: PostgresRow) throws -> WalletRow {
        WalletRow(
            walletID: try decoded({ WalletID(bytes: $0) }, try row.bytes("wallet_id")),
            lastSyncAt: try row.int64("last_sync_ms"),
            cosigned: try decoded({ try SignedCheckpoint.decode($0) }, try row.bytes("cosigned_checkpoint")))
    }

    private func all<T>(_ sql: String, _ decode: ([UInt8]) throws -> T) throws -> [T] {
        try query(sql).rows.map { try decode(try $0.bytes("encoded")) }
    }

    // MARK: whole-table reads

    public func allWallets() throws -> [WalletRow] {
        try query(
            """
            SELECT wallet_id, last_sync_ms, cosigned_checkpoint FROM wallets WHERE cosigned_checkpoint IS NOT NULL
            ORDER BY wallet_id
            """
        ).rows.map(Self.walletRow)
    }

    public func allDebits() throws -> [DebitRecord] {
        try all("SELECT encoded FROM debits ORDER BY payer, transfer_id", DebitRecord.decodeRow)
    }

    public func allCredits() throws -> [CreditRecord] {
        try all("SELECT encoded FROM credits ORDER BY payer, transfer_id", CreditRecord.decodeRow)
    }

    public func allReversals() throws -> [ReversalRecord] {
        try all("SELECT encoded FROM reversals ORDER BY payer, transfer_id", ReversalRecord.decodeRow)
    }

    public func allMatches() throws -> Set<TransferKey> {
        Set(
            try query("SELECT payer, transfer_id FROM matches").rows.map { row in
                TransferKey(
                    payer: try Self.decoded({ WalletID(bytes: $0) }, try row.bytes("payer")),
                    transferID: try Self.decoded({ TransferID(bytes: $0) }, try row.bytes("transfer_id")))
            })
    }

    public func allMints() throws -> [VoucherRecord] {
        try all("SELECT encoded FROM mints ORDER BY issuer, voucher_id", VoucherRecord.decodeRow)
    }

    public func allDeposits() throws -> [VoucherRecord] {
        try all("SELECT encoded FROM deposits ORDER BY issuer, voucher_id", VoucherRecord.decodeRow)
    }

    public func allEvidence() throws -> [EvidenceRecord] {
        try all("SELECT encoded FROM evidence ORDER BY digest") {
            EvidenceRecord(evidence: try Self.decoded(ForkEvidence.decode, $0))
        }
    }

    public func allInconsistencies() throws -> [InconsistencyRecord] {
        try all("SELECT encoded FROM inconsistencies ORDER BY digest", InconsistencyRecord.decodeRow)
    }

    // MARK: the list

    private func head(_ connection: PostgresConnection) throws -> ListHead {
        let rows = try connection.query(
            "SELECT version, digest FROM list_increments WHERE issuer = $1 ORDER BY version DESC LIMIT 1",
            [.bytea(issuer.bytes)]
        ).rows
        guard let row = rows.first else { return .empty }
        return ListHead(
            version: UInt64(try row.int64("version")),
            digest: try Self.decoded({ Digest32(bytes: $0) }, try row.bytes("digest")))
    }

    public func listHead() throws -> ListHead {
        try pool.withConnection { try head($0) }
    }

    public func listIncrements(from version: UInt64) throws -> [ListIncrement] {
        precondition(version >= 1, "list versions count from 1")
        return try query(
            "SELECT increment FROM list_increments WHERE issuer = $1 AND version >= $2 ORDER BY version",
            [.bytea(issuer.bytes), .int8(Int64(version))]
        ).rows.map { try Self.decoded(ListIncrement.decode, try $0.bytes("increment")) }
    }

    /// Appends in one transaction: the head is read, compared with `expected`, and the row (issuer,
    /// head.version + 1) inserted with `ON CONFLICT DO NOTHING`; a process that appended the same version
    /// first makes the insert return no row, and this one writes nothing and answers false.
    public func appendListIncrement(_ increment: ListIncrement, expected: ListHead) throws -> Bool {
        try pool.withConnection { connection in
            try connection.transaction {
                guard try head(connection) == expected else { return false }
                let next = expected.appending(increment)
                let inserted = try connection.query(
                    """
                    INSERT INTO list_increments (issuer, version, increment, digest, signed_at)
                    VALUES ($1, $2, $3, $4, now()) ON CONFLICT (issuer, version) DO NOTHING RETURNING 1 AS inserted
                    """,
                    [
                        .bytea(issuer.bytes), .int8(Int64(next.version)), .bytea(increment.encoded),
                        .bytea(next.digest.bytes),
                    ])
                guard !inserted.rows.isEmpty else { return false }
                let listing: [PostgresValue] = [
                    .bytea(increment.wallet.bytes), .int4(Int32(increment.grounds.rawValue)),
                ]
                switch increment {
                case .add(_, _, let digest):
                    try connection.query(
                        "INSERT INTO listings (wallet_id, grounds, digest) VALUES ($1, $2, $3)",
                        listing + [.bytea(digest.bytes)])
                case .remove:
                    let removed = try connection.query(
                        "DELETE FROM listings WHERE wallet_id = $1 AND grounds = $2", listing)
                    guard removed.affectedRows == 1 else {
                        throw PostgresError(.unexpectedResult, "a removal of a listing not in force")
                    }
                }
                return true
            }
        }
    }

    public func listings() throws -> [Listing] {
        try query("SELECT wallet_id, grounds, digest FROM listings").rows.map { row in
            let groundsValue = try row.int32("grounds")
            guard let grounds = UInt8(exactly: groundsValue).flatMap(ListingGrounds.init(rawValue:)) else {
                throw PostgresError(.unexpectedResult, "listing grounds \(groundsValue)")
            }
            return Listing(
                wallet: try Self.decoded({ WalletID(bytes: $0) }, try row.bytes("wallet_id")), grounds: grounds,
                digest: try Self.decoded({ Digest32(bytes: $0) }, try row.bytes("digest")))
        }.sorted()
    }

    public func insertSettlement(_ settlement: SignedClearingSettlement) throws -> InsertResult {
        let inserted = try query(
            """
            INSERT INTO settlements (digest, wallet_id, encoded) VALUES ($1, $2, $3)
            ON CONFLICT (digest) DO NOTHING RETURNING 1 AS inserted
            """,
            [
                .bytea(settlement.settlement.digest.bytes), .bytea(settlement.settlement.wallet.bytes),
                .bytea(settlement.encoded),
            ])
        // Keyed by the settlement's digest: equal keys are the same settlement (signatures aside).
        return inserted.rows.isEmpty ? .existedEqual : .inserted
    }

    public func allSettlements() throws -> [SignedClearingSettlement] {
        try all("SELECT encoded FROM settlements ORDER BY digest") {
            try Self.decoded(SignedClearingSettlement.decode, $0)
        }
    }

    // MARK: for the HTTP endpoints (docs/CLEARING.md §3.3)

    /// Keeps chunk `encoded` of `wallet`'s open sync `session`, starting at `firstPosition`, until `expiresAt`
    /// (Unix ms). A chunk re-sent with the same bytes is `existedEqual`; other bytes at the same position are
    /// `existedDifferent` and change nothing.
    public func putChunk(wallet: WalletID, session: [UInt8], firstPosition: UInt64, encoded: [UInt8], expiresAt: Int64)
        throws -> InsertResult
    {
        let key: [PostgresValue] = [.bytea(wallet.bytes), .bytea(session), .int8(Int64(firstPosition))]
        return try pool.withConnection { connection in
            try connection.transaction {
                let inserted = try connection.query(
                    """
                    INSERT INTO sync_chunks (wallet_id, session, first_position, encoded, expires_at)
                    VALUES ($1, $2, $3, $4, $5) ON CONFLICT (wallet_id, session, first_position) DO NOTHING
                    RETURNING 1 AS inserted
                    """, key + [.bytea(encoded), .int8(expiresAt)])
                if !inserted.rows.isEmpty { return .inserted }
                let held = try connection.query(
                    "SELECT encoded FROM sync_chunks WHERE wallet_id = $1 AND session = $2 AND first_position = $3",
                    key)
                return try held.rows.first?.bytes("encoded") == encoded ? .existedEqual : .existedDifferent
            }
        }
    }

    /// The unexpired chunks of `wallet`'s `session`, in position order (expiry by the database's clock, which
    /// every `serve` process shares).
    public func chunks(wallet: WalletID, session: [UInt8]) throws -> [[UInt8]] {
        try query(
            """
            SELECT encoded FROM sync_chunks WHERE wallet_id = $1 AND session = $2
                AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint ORDER BY first_position
            """,
            [.bytea(wallet.bytes), .bytea(session)]
        ).rows.map { try $0.bytes("encoded") }
    }

    /// Forgets the chunks of `wallet`'s `session` (after its claim, or when it expired).
    public func deleteChunks(wallet: WalletID, session: [UInt8]) throws {
        try query(
            "DELETE FROM sync_chunks WHERE wallet_id = $1 AND session = $2", [.bytea(wallet.bytes), .bytea(session)])
    }

    /// Forgets every chunk whose `expiresAt` is before `now` (Unix ms); returns how many.
    @discardableResult
    public func deleteExpiredChunks(now: Int64) throws -> Int {
        try query("DELETE FROM sync_chunks WHERE expires_at < $1", [.int8(now)]).affectedRows
    }

    /// The next cosignature batch number, from the `batch_numbers` sequence: 1, 2, …, never the same twice across
    /// processes (a number taken by a batch that then failed is skipped, never reused).
    public func nextBatchNumber() throws -> UInt64 {
        let row = try query("SELECT nextval('batch_numbers')::int8 AS batch").rows.first
        return UInt64(try row?.int64("batch") ?? 0)
    }

    /// Stores a closed batch: its signed head (keyed by `head.head.batch`) and each wallet's cosignature under
    /// it, in one transaction. Storing the same batch again changes nothing.
    public func storeBatch(head: SignedClearingTreeHead, cosignatures: [Cosignature]) throws {
        let batch = PostgresValue.int8(Int64(head.head.batch))
        try pool.withConnection { connection in
            try connection.transaction(attempts: Self.transactionAttempts) {
                try connection.query(
                    """
                    INSERT INTO batches (batch, signed_head) OVERRIDING SYSTEM VALUE VALUES ($1, $2)
                    ON CONFLICT (batch) DO NOTHING
                    """, [batch, .bytea(head.encoded)])
                for cosignature in cosignatures {
                    try connection.query(
                        """
                        INSERT INTO cosignatures (wallet_id, batch, leaf_index, proof, encoded)
                        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (wallet_id, batch) DO NOTHING
                        """,
                        [
                            .bytea(cosignature.leaf.wallet.bytes), batch, .int8(Int64(cosignature.index)),
                            .bytea(cosignature.proof.flatMap(\.bytes)), .bytea(cosignature.encoded),
                        ])
                }
            }
        }
    }

    /// The wallet's cosignature of the latest batch that holds one, or nil.
    public func latestCosignature(wallet: WalletID) throws -> Cosignature? {
        try query(
            "SELECT encoded FROM cosignatures WHERE wallet_id = $1 ORDER BY batch DESC LIMIT 1", [.bytea(wallet.bytes)]
        ).rows.first.map { try Self.decoded(Cosignature.decode, try $0.bytes("encoded")) }
    }

    /// The evidence with `digest`, or nil (what a proven listing names; `GET /v1/evidence/{digest}`).
    public func evidence(digest: EvidenceDigest) throws -> EvidenceRecord? {
        try query("SELECT encoded FROM evidence WHERE digest = $1", [.bytea(digest.bytes)]).rows.first.map {
            EvidenceRecord(evidence: try Self.decoded(ForkEvidence.decode, try $0.bytes("encoded")))
        }
    }

    /// Counts one request of `bytes` bytes against `subject` (a wallet id in hex or a client address) in the
    /// window starting at `windowStart` (Unix ms), in one upsert that two processes cannot both miss; returns the
    /// window's totals including this request (docs/CLEARING.md §3.2, `quotas`).
    public func countRequest(subject: String, windowStart: Int64, bytes: Int) throws -> (requests: Int64, bytes: Int64)
    {
        let row = try query(
            """
            INSERT INTO quotas (subject, window_start, requests, bytes)
            VALUES ($1, to_timestamp($2::float8 / 1000), 1, $3)
            ON CONFLICT (subject, window_start) DO UPDATE SET requests = quotas.requests + 1,
                bytes = quotas.bytes + EXCLUDED.bytes
            RETURNING requests, bytes
            """, [.text(subject), .int8(windowStart), .int8(Int64(bytes))]
        ).rows.first
        guard let row else { throw PostgresError(.unexpectedResult, "the quota upsert returned no row") }
        return (try row.int64("requests"), try row.int64("bytes"))
    }
}

/// The routes' store (ClearingServiceStore.swift) on PostgreSQL: the session is kept as its 16 bytes.
extension PostgresClearingStore: ClearingServiceStore {
    public func putChunk(
        wallet: WalletID, session: SyncSessionID, firstPosition: UInt64, encoded: [UInt8], expiresAt: Int64
    ) throws -> InsertResult {
        try putChunk(
            wallet: wallet, session: session.bytes, firstPosition: firstPosition, encoded: encoded, expiresAt: expiresAt
        )
    }

    public func chunks(wallet: WalletID, session: SyncSessionID) throws -> [[UInt8]] {
        try chunks(wallet: wallet, session: session.bytes)
    }

    public func deleteChunks(wallet: WalletID, session: SyncSessionID) throws {
        try deleteChunks(wallet: wallet, session: session.bytes)
    }

    public func countRequest(subject: String, windowStart: Int64, bytes: Int64) throws -> (
        requests: Int64, bytes: Int64
    ) {
        try countRequest(subject: subject, windowStart: windowStart, bytes: Int(clamping: bytes))
    }
}
