import SecureCrypto

/// What an insert of a keyed record did: "insert if absent, tell me whether I did" (docs/CLEARING.md §2.6).
/// PostgreSQL answers it with `INSERT … ON CONFLICT (key) DO NOTHING RETURNING`: a row returned is
/// `inserted`; none means the row existed, and the store reads it back and compares its content (the
/// records' `sameContent`, or equality for records without signatures).
public enum InsertResult: Hashable, Sendable {
    /// This transaction wrote the row.
    case inserted
    /// A row with the key existed, with the same content: a re-delivery.
    case existedEqual
    /// A row with the key existed, with other content.
    case existedDifferent
}

/// Where a held checkpoint of a wallet came from.
public enum HeldCheckpointSource: Hashable, Sendable {
    /// The wallet's own checkpoint, cosigned at a sync.
    case cosigned
    /// The payer checkpoint inside a transfer that this payee credited.
    case credit(payee: WalletID, transferID: TransferID)
}

/// A signed checkpoint of a wallet that the clearing holds (the `held_checkpoints` rows, keyed by
/// (wallet, size, checkpoint digest)).
public struct HeldCheckpoint: Hashable, Sendable {
    /// The signed checkpoint.
    public let checkpoint: SignedCheckpoint
    /// Where it came from.
    public let source: HeldCheckpointSource

    /// Collects the row.
    public init(checkpoint: SignedCheckpoint, source: HeldCheckpointSource) {
        self.checkpoint = checkpoint
        self.source = source
    }

    /// The wallet whose checkpoint it is.
    public var wallet: WalletID { checkpoint.checkpoint.walletID }
    /// Its size.
    public var size: UInt64 { checkpoint.checkpoint.size }
    /// SHA-256 of the checkpoint's encoding (not of the signature, which is randomized).
    public var digest: Digest32 { Digest32(of: checkpoint.checkpoint.encoded) }
}

/// What the clearing knows of a wallet (the `wallets` row, money part): when it last synced and the checkpoint
/// that sync closed with, whose balances are the wallet's synced balances.
public struct WalletRow: Hashable, Sendable {
    /// The wallet.
    public let walletID: WalletID
    /// When its last sync closed, in Unix milliseconds.
    public let lastSyncAt: Int64
    /// The checkpoint that sync closed with: cosigned by the clearing.
    public let cosigned: SignedCheckpoint

    /// Collects the row.
    public init(walletID: WalletID, lastSyncAt: Int64, cosigned: SignedCheckpoint) {
        self.walletID = walletID
        self.lastSyncAt = lastSyncAt
        self.cosigned = cosigned
    }

    /// The balances of its cosigned checkpoint.
    public var balances: [AssetAmount] { cosigned.checkpoint.snapshot.balances }
}

/// Fork evidence the clearing holds against a wallet (the `evidence` rows, keyed by digest).
public struct EvidenceRecord: Hashable, Sendable {
    /// The evidence.
    public let evidence: ForkEvidence

    /// Collects the row.
    public init(evidence: ForkEvidence) { self.evidence = evidence }

    /// SHA-256 of its encoding: the key, and what a proven listing names.
    public var digest: EvidenceDigest { EvidenceDigest(of: evidence.encoded) }
    /// The accused wallet.
    public var accused: WalletID { evidence.accused }
}

/// What makes a wallet inconsistent (docs/CLEARING.md §2.9; §7, questions 5 and 6).
public enum InconsistencyKind: UInt8, Hashable, Sendable, CaseIterable {
    /// The payer recorded two different transfers under one transfer id.
    case reusedTransferID = 1
    /// The payee both credited a transfer and signed its refusal.
    case creditedAndRefused = 2
    /// Two payees credited transfers of the payer beyond its cosigned size: nothing proves the payer
    /// checkpoints they carry consistent. Computed from the credits, never stored; it ends when the payer
    /// syncs past them.
    case unprovenCheckpoints = 3
}

/// A contradiction kept against a wallet with both its parts named (the `inconsistencies` rows, keyed by
/// (wallet, digest)). Nothing proves it offline as fork evidence would, so it lists the wallet inconsistent.
public struct InconsistencyRecord: Hashable, Sendable {
    /// The wallet the contradiction is about.
    public let wallet: WalletID
    /// What it is.
    public let kind: InconsistencyKind
    /// The transfer it is about.
    public let key: TransferKey
    /// SHA-256 of each part: the two transfer digests, or the credited transfer's and the refusal's.
    public let parts: [Digest32]

    /// Collects the row.
    public init(wallet: WalletID, kind: InconsistencyKind, key: TransferKey, parts: [Digest32]) {
        self.wallet = wallet
        self.kind = kind
        self.key = key
        self.parts = parts
    }

    /// SHA-256("secure-clearing-inconsistency-v1" ‖ 0x00 ‖ kind ‖ payer ‖ transfer id ‖ parts): the key,
    /// and the digest an inconsistent listing names.
    public var digest: Digest32 {
        var writer = ByteWriter()
        writer.write(raw: DomainLabel.bytes("secure-clearing-inconsistency-v1"))
        writer.write(kind.rawValue)
        writer.write(key.payer)
        writer.write(key.transferID)
        for part in parts { writer.write(part) }
        return Digest32(of: writer.bytes)
    }
}

/// One transaction over the clearing's records (docs/CLEARING.md §2.6, §3.2). Every write is "insert if
/// absent, tell me whether I did"; every read sees this transaction's writes and what committed before it.
/// Errors thrown are the store's own (a lost connection), never a client's fault: the transaction then
/// leaves nothing behind.
public protocol ClearingTransaction {
    /// Writes a debit, keyed (payer, transfer id).
    func insertDebit(_ record: DebitRecord) throws -> InsertResult
    /// Writes a credit, keyed (payer, transfer id).
    func insertCredit(_ record: CreditRecord) throws -> InsertResult
    /// Writes a reversal, keyed (payer, transfer id).
    func insertReversal(_ record: ReversalRecord) throws -> InsertResult
    /// Writes a confirmation, keyed (payer, transfer id).
    func insertConfirmation(_ record: ConfirmationRecord) throws -> InsertResult
    /// Writes a mint, keyed (issuer, voucher id).
    func insertMint(_ record: VoucherRecord) throws -> InsertResult
    /// Writes a deposit, keyed (issuer, voucher id).
    func insertDeposit(_ record: VoucherRecord) throws -> InsertResult
    /// Writes the match of `key` at `time` (Unix ms); a second match of one key is `existedEqual`.
    func insertMatch(_ key: TransferKey, time: Int64) throws -> InsertResult
    /// Writes a held checkpoint, keyed (wallet, size, checkpoint digest); equal keys are equal content.
    func insertHeldCheckpoint(_ held: HeldCheckpoint) throws -> InsertResult
    /// Writes fork evidence, keyed by its digest.
    func insertEvidence(_ record: EvidenceRecord) throws -> InsertResult
    /// Writes an inconsistency, keyed by its digest.
    func insertInconsistency(_ record: InconsistencyRecord) throws -> InsertResult

    /// The debit of `key`, if held.
    func debit(_ key: TransferKey) throws -> DebitRecord?
    /// The credit of `key`, if held.
    func credit(_ key: TransferKey) throws -> CreditRecord?
    /// The reversal of `key`, if held.
    func reversal(_ key: TransferKey) throws -> ReversalRecord?
    /// Whether `key` is matched.
    func isMatched(_ key: TransferKey) throws -> Bool
    /// The held checkpoints of `wallet` of exactly `size` entries.
    func heldCheckpoints(wallet: WalletID, size: UInt64) throws -> [HeldCheckpoint]

    /// The wallet's row, or nil before its first sync.
    func wallet(_ id: WalletID) throws -> WalletRow?
    /// Writes the wallet's row (the upsert a closed sync makes).
    func setWallet(_ row: WalletRow) throws
}

/// The clearing's records: the in-memory store (`InMemoryClearingStore`) and, in step (b), PostgreSQL.
public protocol ClearingStore {
    /// The store's transaction.
    associatedtype Transaction: ClearingTransaction

    /// Runs `body` in one transaction that holds the rows of `wallets` locked, taken in wallet-id order
    /// (bytewise, as PostgreSQL orders `bytea`), so that two transactions never wait for each other in a
    /// cycle. The transaction commits when `body` returns and leaves nothing when it throws.
    func transaction<Result>(locking wallets: [WalletID], _ body: (Transaction) throws -> Result) throws -> Result

    // Whole-table reads for the reports (conservation, listings); PostgreSQL reads them with cursors.
    /// Every wallet row.
    func allWallets() throws -> [WalletRow]
    /// Every debit.
    func allDebits() throws -> [DebitRecord]
    /// Every credit.
    func allCredits() throws -> [CreditRecord]
    /// Every reversal.
    func allReversals() throws -> [ReversalRecord]
    /// Every matched key.
    func allMatches() throws -> Set<TransferKey>
    /// Every mint.
    func allMints() throws -> [VoucherRecord]
    /// Every deposit.
    func allDeposits() throws -> [VoucherRecord]
    /// Every piece of evidence.
    func allEvidence() throws -> [EvidenceRecord]
    /// Every inconsistency.
    func allInconsistencies() throws -> [InconsistencyRecord]

    /// The list's head: its version (0 when empty) and digest(version).
    func listHead() throws -> ListHead
    /// The increments `from` … head, in version order (`from` ≥ 1).
    func listIncrements(from version: UInt64) throws -> [ListIncrement]
    /// Appends increment `head.version + 1` with its chained digest, if the head is still `expected`; false
    /// when another process appended first (PostgreSQL: the `list_increments` key (issuer, version)).
    func appendListIncrement(_ increment: ListIncrement, expected: ListHead) throws -> Bool
    /// The listings in force: wallet and grounds with the digest that grounds them (the `listings` rows).
    func listings() throws -> [Listing]
    /// Keeps a settlement (keyed by its digest); the listing it names is not computed again.
    func insertSettlement(_ settlement: SignedClearingSettlement) throws -> InsertResult
    /// Every settlement kept.
    func allSettlements() throws -> [SignedClearingSettlement]
}
