import SecureCrypto

extension ClearingLimits {
    /// Times `publishListings` computes and appends again when another process appended to the list first:
    /// two publishers at once is rare (one per issuer normally), three losses in a row means a broken store.
    public static let listPublishAttemptsMax = 3
}

/// One whole entry of an accepted sync, as the sync's verification hands it over: its position, the entry and,
/// for a `paymentOut`, the signed transfer that carries it.
public struct SyncedEntry: Hashable, Sendable {
    /// The entry's position in the wallet's ledger.
    public let position: UInt64
    /// The verified entry.
    public let entry: LedgerEntry
    /// The signed transfer of a `paymentOut`; nil for other kinds.
    public let transfer: SignedTransfer?

    /// Collects them.
    public init(position: UInt64, entry: LedgerEntry, transfer: SignedTransfer?) {
        self.position = position
        self.entry = entry
        self.transfer = transfer
    }
}

/// What the book did with one entry.
public enum EntryOutcome: Hashable, Sendable {
    /// The entry's record was written.
    case recorded
    /// The record was there already with the same content (a re-sent sync).
    case duplicate
    /// The entry's kind gives no money record.
    case noRecord
    /// The record was not written, for this reason.
    case refused(RecordRefusal)
}

/// What one `ClearingBook.record` did. A value: a client's fault is an outcome here, never an error.
public struct RecordResult: Hashable, Sendable {
    /// One outcome per entry, in the order given.
    public internal(set) var outcomes: [EntryOutcome] = []
    /// The transfers matched by this call (debit and credit both held and in agreement).
    public internal(set) var matched: [TransferKey] = []
    /// Fork evidence this call found and kept.
    public internal(set) var evidence: [EvidenceDigest] = []
    /// Contradictions this call found and kept.
    public internal(set) var inconsistencies: [InconsistencyRecord] = []
}

/// What `ClearingBook.settle` did.
public enum SettleOutcome: Hashable, Sendable {
    /// The settlement is kept; the next `publishListings` removes the listing.
    case accepted
    /// The signature is not the clearing key's, or the settlement names another issuer.
    case invalidSignature
    /// No listing in force matches its wallet, grounds and digest.
    case noSuchListing
    /// Unsynced listings end only by a sync.
    case unsyncedNotSettled
}

/// The cross-wallet rules of the clearing (docs/CLEARING.md §2.4, §2.6, §2.9) over a `ClearingStore`: each
/// accepted sync's money records are written once, matched across wallets, and contradictions kept as
/// evidence or inconsistencies. Nothing here trusts the order in which wallets sync.
public struct ClearingBook<Store: ClearingStore> {
    /// The clearing's issuer: only money of its assets is recorded.
    public let issuer: WalletID
    /// The records.
    public let store: Store

    /// A book of `issuer`'s clearing over `store`.
    public init(issuer: WalletID, store: Store) {
        self.issuer = issuer
        self.store = store
    }

    /// Records the money entries of one accepted sync of `wallet`, which closed with `checkpoint` at `now`
    /// (Unix ms), in one transaction that locks the wallet and every counterparty its entries name.
    /// `logs` gives the key-event logs the sync holds (payees' for reversals, payers' for fork evidence).
    /// `also` runs last in the same transaction; what it throws rolls everything back. Throws only the store's
    /// own errors and `also`'s.
    public func record(
        wallet: WalletID, entries: [SyncedEntry], checkpoint: SignedCheckpoint, now: Int64,
        logs: (WalletID) -> KeyEventLog?, also: (Store.Transaction) throws -> Void = { _ in }
    ) throws -> RecordResult {
        let extracted = entries.map {
            ClearingRecord.extract(wallet: wallet, issuer: issuer, entry: $0.entry, transfer: $0.transfer)
        }
        var locked: Set<WalletID> = [wallet]
        for case .success(let record?) in extracted { locked.formUnion(record.parties) }
        let order = locked.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        return try withoutActuallyEscaping(logs) { logs in
            try store.transaction(locking: order) { (transaction: Store.Transaction) -> RecordResult in
                let result = try Self.run(
                    wallet: wallet, extracted: extracted, checkpoint: checkpoint, now: now, logs: logs, in: transaction)
                // The caller's own writes of this sync (Clearing: state, history, logs) commit or roll back with it.
                try also(transaction)
                return result
            }
        }
    }

    private static func run(
        wallet: WalletID, extracted: [Result<ClearingRecord?, RecordRefusal>], checkpoint: SignedCheckpoint,
        now: Int64, logs: @escaping (WalletID) -> KeyEventLog?, in transaction: Store.Transaction
    ) throws -> RecordResult {
        var run = Run(transaction: transaction, now: now, logs: logs)
        for result in extracted {
            switch result {
            case .failure(let refusal): run.result.outcomes.append(.refused(refusal))
            case .success(nil): run.result.outcomes.append(.noRecord)
            case .success(let record?): run.result.outcomes.append(try run.apply(record))
            }
        }
        try run.hold(HeldCheckpoint(checkpoint: checkpoint, source: .cosigned))
        if let row = try transaction.wallet(wallet), row.cosigned.checkpoint.size > checkpoint.checkpoint.size {
            return run.result
        }
        try transaction.setWallet(WalletRow(walletID: wallet, lastSyncAt: now, cosigned: checkpoint))
        return run.result
    }

    /// Keeps a settlement signed by the clearing key; the next `publishListings` removes its listing.
    public func settle(_ signed: SignedClearingSettlement, clearingKey: P256.PublicKey) throws -> SettleOutcome {
        let settlement = signed.settlement
        guard signed.isValid(signedBy: clearingKey), settlement.issuer == issuer else { return .invalidSignature }
        guard settlement.grounds != .unsynced else { return .unsyncedNotSettled }
        let listed = try store.listings().contains {
            $0.wallet == settlement.wallet && $0.grounds == settlement.grounds
                && $0.digest == settlement.groundsDigest
        }
        guard listed else { return .noSuchListing }
        _ = try store.insertSettlement(signed)
        return .accepted
    }
}

extension ClearingRecord {
    /// The wallets the record names: the rows a transaction writing it locks.
    var parties: [WalletID] {
        switch self {
        case .debit(let record): [record.key.payer, record.payee]
        case .credit(let record): [record.key.payer, record.payee]
        case .reversal(let record): [record.key.payer, record.payee]
        case .confirmation(let record): [record.key.payer, record.payee]
        case .mint(let record), .deposit(let record): [record.key.issuer, record.recipient]
        }
    }
}

/// One `record` call inside its transaction.
private struct Run<Transaction: ClearingTransaction> {
    let transaction: Transaction
    let now: Int64
    let logs: (WalletID) -> KeyEventLog?
    var result = RecordResult()

    init(transaction: Transaction, now: Int64, logs: @escaping (WalletID) -> KeyEventLog?) {
        self.transaction = transaction
        self.now = now
        self.logs = logs
    }

    mutating func apply(_ record: ClearingRecord) throws -> EntryOutcome {
        switch record {
        case .debit(let debit): return try apply(debit)
        case .credit(let credit): return try apply(credit)
        case .reversal(let reversal): return try apply(reversal)
        case .confirmation(let confirmation):
            return outcome(try transaction.insertConfirmation(confirmation), conflict: .recordConflict)
        case .mint(let mint): return outcome(try transaction.insertMint(mint), conflict: .recordConflict)
        case .deposit(let deposit): return outcome(try transaction.insertDeposit(deposit), conflict: .recordConflict)
        }
    }

    private func outcome(_ insert: InsertResult, conflict: RecordRefusal) -> EntryOutcome {
        switch insert {
        case .inserted: .recorded
        case .existedEqual: .duplicate
        case .existedDifferent: .refused(conflict)
        }
    }

    private mutating func apply(_ debit: DebitRecord) throws -> EntryOutcome {
        let insert = try transaction.insertDebit(debit)
        if insert == .existedDifferent, let held = try transaction.debit(debit.key) {
            try keep(
                InconsistencyRecord(
                    wallet: debit.key.payer, kind: .reusedTransferID, key: debit.key,
                    parts: [held.transferDigest, debit.transferDigest]))
            return .refused(.reusedTransferID)
        }
        try match(debit.key)
        return outcome(insert, conflict: .reusedTransferID)
    }

    private mutating func apply(_ credit: CreditRecord) throws -> EntryOutcome {
        let insert = try transaction.insertCredit(credit)
        // The payer checkpoint of a credit its debit does not back yet is held, and so is the one of a credit
        // refused for a reused id: both parts are kept, and two of one size that differ prove a fork.
        let backed = try transaction.debit(credit.key) != nil
        if insert == .existedDifferent || !backed {
            try hold(
                HeldCheckpoint(
                    checkpoint: credit.payerCheckpoint,
                    source: .credit(payee: credit.payee, transferID: credit.key.transferID)))
        }
        if insert == .existedDifferent, let held = try transaction.credit(credit.key) {
            // One (payer, transfer id), two transfers: the payer signed both (a payee's credit is checked
            // against the payer's signature), so the payer is the one inconsistent.
            try keep(
                InconsistencyRecord(
                    wallet: credit.key.payer, kind: .reusedTransferID, key: credit.key,
                    parts: [held.transferDigest, credit.transferDigest]))
            return .refused(.reusedTransferID)
        }
        try match(credit.key)
        if let reversal = try transaction.reversal(credit.key), reversal.payee == credit.payee {
            try keep(creditedAndRefused(credit, reversal))
        }
        return outcome(insert, conflict: .reusedTransferID)
    }

    private mutating func apply(_ reversal: ReversalRecord) throws -> EntryOutcome {
        guard let debit = try transaction.debit(reversal.key) else { return .refused(.reversalWithoutDebit) }
        guard let payeeLog = logs(debit.payee) else { return .refused(.payeeLogMissing) }
        let verdict = RefusalCheck.evaluate(
            reversal.refusal, of: debit.transfer, payeeLog: payeeLog, state: LedgerState())
        guard case .accept(let draft) = verdict, draft.amount == reversal.amount, reversal.payee == debit.payee else {
            return .refused(.refusalInvalid)
        }
        let insert = try transaction.insertReversal(reversal)
        if insert != .existedDifferent, let credit = try transaction.credit(reversal.key),
            credit.payee == reversal.payee
        {
            try keep(creditedAndRefused(credit, reversal))
        }
        return outcome(insert, conflict: .recordConflict)
    }

    private func creditedAndRefused(_ credit: CreditRecord, _ reversal: ReversalRecord) -> InconsistencyRecord {
        InconsistencyRecord(
            wallet: credit.payee, kind: .creditedAndRefused, key: credit.key,
            parts: [credit.transferDigest, reversal.refusal.payloadDigest])
    }

    /// Writes the match of `key` when its debit and credit are both held and agree; a debit and a credit that
    /// disagree are two transfers the payer signed under one id.
    private mutating func match(_ key: TransferKey) throws {
        guard let debit = try transaction.debit(key), let credit = try transaction.credit(key) else { return }
        guard debit.amount == credit.amount, debit.payee == credit.payee,
            debit.transferDigest == credit.transferDigest
        else {
            try keep(
                InconsistencyRecord(
                    wallet: key.payer, kind: .reusedTransferID, key: key,
                    parts: [debit.transferDigest, credit.transferDigest]))
            return
        }
        if try transaction.insertMatch(key, time: now) == .inserted { result.matched.append(key) }
    }

    private mutating func keep(_ inconsistency: InconsistencyRecord) throws {
        if try transaction.insertInconsistency(inconsistency) == .inserted {
            result.inconsistencies.append(inconsistency)
        }
    }

    /// Keeps a checkpoint of a wallet and compares it with every other held one of the same size: two that
    /// commit to different roots or heads are type 1 evidence, when the wallet's log proves both its own.
    mutating func hold(_ held: HeldCheckpoint) throws {
        guard try transaction.insertHeldCheckpoint(held) == .inserted else { return }
        let signed = held.checkpoint
        for other in try transaction.heldCheckpoints(wallet: held.wallet, size: held.size) {
            let a = other.checkpoint.checkpoint
            guard a.root != signed.checkpoint.root || a.head != signed.checkpoint.head,
                let log = logs(held.wallet)
            else { continue }
            let evidence = ForkEvidence(.conflictingCheckpoints(other.checkpoint, signed), log: log)
            guard evidence.verify().isProven else { continue }
            let record = EvidenceRecord(evidence: evidence)
            if try transaction.insertEvidence(record) == .inserted { result.evidence.append(record.digest) }
        }
    }
}

extension ClearingBook {
    /// The listings the records call for at `now` (docs/CLEARING.md §2.9), sorted, settled ones left out:
    /// - proven: a wallet that fork evidence held bars (`ForkEvidence.bannedWallet`), named by the smallest
    ///   evidence digest;
    /// - inconsistent: a wallet with a kept contradiction (a reused transfer id, a credited and refused
    ///   transfer), or a payer whose credits by two payees lie beyond its cosigned size, unmatched, so nothing
    ///   proves the payer checkpoints they carry consistent;
    /// - unsynced: a payer seen in others' credits that has not synced within `unsyncedAfter` milliseconds
    ///   (or never).
    public func listings(now: Int64, unsyncedAfter: Int64) throws -> [Listing] {
        let settled = Set(try store.allSettlements().map { SettledKey($0.settlement) })
        var chosen: [SettledKey: Digest32] = [:]
        func add(_ wallet: WalletID, _ grounds: ListingGrounds, _ digest: Digest32) {
            let key = SettledKey(wallet: wallet, grounds: grounds, digest: digest)
            guard !settled.contains(key) else { return }
            let slot = SettledKey(wallet: wallet, grounds: grounds, digest: Self.zeros)
            if let held = chosen[slot], held.bytes.lexicographicallyPrecedes(digest.bytes) { return }
            chosen[slot] = digest
        }
        for record in try store.allEvidence() {
            if let wallet = record.evidence.bannedWallet { add(wallet, .proven, Digest32(record.digest)) }
        }
        for record in try store.allInconsistencies() { add(record.wallet, .inconsistent, record.digest) }
        let wallets = Dictionary(uniqueKeysWithValues: try store.allWallets().map { ($0.walletID, $0) })
        let matches = try store.allMatches()
        var unbacked: [WalletID: [CreditRecord]] = [:]
        var payers: Set<WalletID> = []
        for credit in try store.allCredits() {
            payers.insert(credit.key.payer)
            if !matches.contains(credit.key) { unbacked[credit.key.payer, default: []].append(credit) }
        }
        for payer in payers where wallets[payer].map({ now - $0.lastSyncAt > unsyncedAfter }) ?? true {
            add(payer, .unsynced, Self.zeros)
        }
        for (payer, credits) in unbacked {
            let row = wallets[payer]
            let cosignedSize = row?.cosigned.checkpoint.size ?? 0
            let beyond = credits.filter { $0.payerCheckpoint.checkpoint.size > cosignedSize }
            if Set(beyond.map(\.payee)).count >= 2 {
                let first = beyond[0]
                let second = beyond.first { $0.payee != first.payee }!
                add(
                    payer, .inconsistent,
                    InconsistencyRecord(
                        wallet: payer, kind: .unprovenCheckpoints, key: first.key,
                        parts: [first.payerCheckpoint, second.payerCheckpoint].map {
                            Digest32(of: $0.checkpoint.encoded)
                        }
                    ).digest)
            }
        }
        return chosen.map { Listing(wallet: $0.key.wallet, grounds: $0.key.grounds, digest: $0.value) }.sorted()
    }

    /// Brings the published list to `listings(now:unsyncedAfter:)`: removes first, then adds, each in wallet
    /// order, one increment per change. A removal names the settlement that ended the listing, or the digest
    /// of the cosigned checkpoint whose sync resolved it (zeros when the wallet never synced). Returns the
    /// increments appended.
    public func publishListings(now: Int64, unsyncedAfter: Int64) throws -> [ListIncrement] {
        for _ in 0..<ClearingLimits.listPublishAttemptsMax {
            let head = try store.listHead()
            let wanted = try listings(now: now, unsyncedAfter: unsyncedAfter)
            let increments = try changes(from: try store.listings(), to: wanted)
            var expected = head
            var appended: [ListIncrement] = []
            for increment in increments {
                guard try store.appendListIncrement(increment, expected: expected) else { break }
                expected = expected.appending(increment)
                appended.append(increment)
            }
            if appended.count == increments.count { return appended }
        }
        throw ClearingBookError(.listBusy, "another process kept appending to the list; try again")
    }

    private func changes(from current: [Listing], to wanted: [Listing]) throws -> [ListIncrement] {
        func slot(_ listing: Listing) -> SettledKey {
            SettledKey(wallet: listing.wallet, grounds: listing.grounds, digest: Self.zeros)
        }
        let wantedSlots = Set(wanted.map(slot))
        let currentSlots = Set(current.map(slot))
        let settlements = Dictionary(
            try store.allSettlements().map { (SettledKey($0.settlement), $0.settlement.digest) }
        ) { first, _ in first }
        var increments: [ListIncrement] = []
        for listing in current where !wantedSlots.contains(slot(listing)) {
            let key = SettledKey(wallet: listing.wallet, grounds: listing.grounds, digest: listing.digest)
            let settlement = try settlements[key] ?? resolvingDigest(listing.wallet)
            increments.append(.remove(wallet: listing.wallet, grounds: listing.grounds, settlement: settlement))
        }
        for listing in wanted where !currentSlots.contains(slot(listing)) {
            increments.append(.add(wallet: listing.wallet, grounds: listing.grounds, evidence: listing.digest))
        }
        return increments
    }

    private func resolvingDigest(_ wallet: WalletID) throws -> Digest32 {
        guard let row = try store.transaction(locking: [wallet], { try $0.wallet(wallet) }) else { return Self.zeros }
        return Digest32(of: row.cosigned.checkpoint.encoded)
    }

    static var zeros: Digest32 { ListHead.empty.digest }
}

/// (wallet, grounds, digest): what a settlement ends.
struct SettledKey: Hashable {
    let wallet: WalletID
    let grounds: ListingGrounds
    let digest: Digest32

    init(wallet: WalletID, grounds: ListingGrounds, digest: Digest32) {
        self.wallet = wallet
        self.grounds = grounds
        self.digest = digest
    }

    init(_ settlement: ClearingSettlement) {
        self.init(wallet: settlement.wallet, grounds: settlement.grounds, digest: settlement.groundsDigest)
    }
}
