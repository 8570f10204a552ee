import SecureCrypto

/// The clearing's records in memory: the tables of docs/CLEARING.md §3.2 as dictionaries with the same keys,
/// behind the same "insert if absent, tell me whether I did" contract as PostgreSQL, so the rules cannot lean
/// on anything the database would not give them. One process, one thread: a transaction runs alone, and one
/// that throws restores the tables as they were.
public final class InMemoryClearingStore: ClearingStore, ClearingTransaction {
    /// The tables.
    struct Tables {
        var wallets: [WalletID: WalletRow] = [:]
        var debits: [TransferKey: DebitRecord] = [:]
        var credits: [TransferKey: CreditRecord] = [:]
        var matches: [TransferKey: Int64] = [:]
        var reversals: [TransferKey: ReversalRecord] = [:]
        var confirmations: [TransferKey: ConfirmationRecord] = [:]
        var mints: [VoucherKey: VoucherRecord] = [:]
        var deposits: [VoucherKey: VoucherRecord] = [:]
        /// Keyed (wallet, size) → checkpoint digest → row: the (wallet, size, digest) key of §3.2.
        var heldCheckpoints: [HeldKey: [Digest32: HeldCheckpoint]] = [:]
        var evidence: [EvidenceDigest: EvidenceRecord] = [:]
        var inconsistencies: [Digest32: InconsistencyRecord] = [:]
        var increments: [ListIncrement] = []
        var listHead = ListHead.empty
        var listings: [ListingKey: Digest32] = [:]
        var settlements: [Digest32: SignedClearingSettlement] = [:]
        // What `Clearing` keeps per wallet (ClearingSyncTransaction, InMemoryClearingSync.swift).
        var logs: [WalletID: KeyEventLog] = [:]
        var admitted: [WalletID: Int64] = [:]
        var syncStates: [WalletID: WalletSyncState] = [:]
        var histories: [WalletID: SyncHistory] = [:]
    }

    struct HeldKey: Hashable {
        let wallet: WalletID
        let size: UInt64
    }

    struct ListingKey: Hashable {
        let wallet: WalletID
        let grounds: ListingGrounds
    }

    var tables = Tables()
    /// Whether a transaction is running: transactions do not nest.
    private var inTransaction = false

    /// An empty store.
    public init() {}

    public func transaction<Result>(locking wallets: [WalletID], _ body: (InMemoryClearingStore) throws -> Result)
        throws -> Result
    {
        precondition(!inTransaction, "clearing transactions do not nest")
        inTransaction = true
        defer { inTransaction = false }
        let saved = tables
        do {
            return try body(self)
        } catch {
            tables = saved
            throw error
        }
    }

    /// Removes a debit: only for the tests that show a dropped record breaks conservation.
    package func dropDebit(_ key: TransferKey) { tables.debits[key] = nil }

    private static func insert<Key: Hashable, Record>(
        _ record: Record, at key: Key, into table: inout [Key: Record], same: (Record, Record) -> Bool
    ) -> InsertResult {
        guard let existing = table[key] else {
            table[key] = record
            return .inserted
        }
        return same(existing, record) ? .existedEqual : .existedDifferent
    }

    public func insertDebit(_ record: DebitRecord) -> InsertResult {
        Self.insert(record, at: record.key, into: &tables.debits) { $0.sameContent($1) }
    }

    public func insertCredit(_ record: CreditRecord) -> InsertResult {
        Self.insert(record, at: record.key, into: &tables.credits) { $0.sameContent($1) }
    }

    public func insertReversal(_ record: ReversalRecord) -> InsertResult {
        Self.insert(record, at: record.key, into: &tables.reversals) { $0.sameContent($1) }
    }

    public func insertConfirmation(_ record: ConfirmationRecord) -> InsertResult {
        Self.insert(record, at: record.key, into: &tables.confirmations, same: ==)
    }

    public func insertMint(_ record: VoucherRecord) -> InsertResult {
        Self.insert(record, at: record.key, into: &tables.mints, same: ==)
    }

    public func insertDeposit(_ record: VoucherRecord) -> InsertResult {
        Self.insert(record, at: record.key, into: &tables.deposits, same: ==)
    }

    public func insertMatch(_ key: TransferKey, time: Int64) -> InsertResult {
        // The match's only column is when it was written: a second writer finds the key and writes nothing.
        Self.insert(time, at: key, into: &tables.matches) { _, _ in true }
    }

    public func insertHeldCheckpoint(_ held: HeldCheckpoint) -> InsertResult {
        let key = HeldKey(wallet: held.wallet, size: held.size)
        var rows = tables.heldCheckpoints[key, default: [:]]
        let result = Self.insert(held, at: held.digest, into: &rows) { _, _ in true }
        tables.heldCheckpoints[key] = rows
        return result
    }

    public func insertEvidence(_ record: EvidenceRecord) -> InsertResult {
        Self.insert(record, at: record.digest, into: &tables.evidence, same: ==)
    }

    public func insertInconsistency(_ record: InconsistencyRecord) -> InsertResult {
        Self.insert(record, at: record.digest, into: &tables.inconsistencies, same: ==)
    }

    public func debit(_ key: TransferKey) -> DebitRecord? { tables.debits[key] }
    public func credit(_ key: TransferKey) -> CreditRecord? { tables.credits[key] }
    public func reversal(_ key: TransferKey) -> ReversalRecord? { tables.reversals[key] }
    public func isMatched(_ key: TransferKey) -> Bool { tables.matches[key] != nil }

    public func heldCheckpoints(wallet: WalletID, size: UInt64) -> [HeldCheckpoint] {
        (tables.heldCheckpoints[HeldKey(wallet: wallet, size: size)] ?? [:]).sorted {
            $0.key.bytes.lexicographicallyPrecedes($1.key.bytes)
        }.map(\.value)
    }

    public func wallet(_ id: WalletID) -> WalletRow? { tables.wallets[id] }
    public func setWallet(_ row: WalletRow) { tables.wallets[row.walletID] = row }

    public func allWallets() -> [WalletRow] {
        tables.wallets.values.sorted { $0.walletID.bytes.lexicographicallyPrecedes($1.walletID.bytes) }
    }
    public func allDebits() -> [DebitRecord] { tables.debits.values.sorted { $0.key < $1.key } }
    public func allCredits() -> [CreditRecord] { tables.credits.values.sorted { $0.key < $1.key } }
    public func allReversals() -> [ReversalRecord] { tables.reversals.values.sorted { $0.key < $1.key } }
    public func allMatches() -> Set<TransferKey> { Set(tables.matches.keys) }
    public func allMints() -> [VoucherRecord] { tables.mints.values.sorted { $0.key < $1.key } }
    public func allDeposits() -> [VoucherRecord] { tables.deposits.values.sorted { $0.key < $1.key } }
    public func allEvidence() -> [EvidenceRecord] {
        tables.evidence.values.sorted { $0.digest.bytes.lexicographicallyPrecedes($1.digest.bytes) }
    }
    public func allInconsistencies() -> [InconsistencyRecord] {
        tables.inconsistencies.values.sorted { $0.digest.bytes.lexicographicallyPrecedes($1.digest.bytes) }
    }

    public func listHead() -> ListHead { tables.listHead }

    public func listIncrements(from version: UInt64) -> [ListIncrement] {
        precondition(version >= 1, "list versions count from 1")
        guard version <= UInt64(tables.increments.count) else { return [] }
        return Array(tables.increments[Int(version - 1)...])
    }

    public func appendListIncrement(_ increment: ListIncrement, expected: ListHead) -> Bool {
        guard tables.listHead == expected else { return false }
        let key = ListingKey(wallet: increment.wallet, grounds: increment.grounds)
        switch increment {
        case .add(_, _, let digest):
            precondition(tables.listings[key] == nil, "a listing in force is not added again")
            tables.listings[key] = digest
        case .remove:
            precondition(tables.listings[key] != nil, "only a listing in force is removed")
            tables.listings[key] = nil
        }
        tables.increments.append(increment)
        tables.listHead = tables.listHead.appending(increment)
        return true
    }

    public func listings() -> [Listing] {
        tables.listings.map { Listing(wallet: $0.key.wallet, grounds: $0.key.grounds, digest: $0.value) }.sorted()
    }

    public func insertSettlement(_ settlement: SignedClearingSettlement) -> InsertResult {
        Self.insert(settlement, at: settlement.settlement.digest, into: &tables.settlements) { _, _ in true }
    }

    public func allSettlements() -> [SignedClearingSettlement] {
        tables.settlements.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }.map(\.value)
    }
}
