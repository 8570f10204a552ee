import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Real signed histories for the clearing's tests: `SoftwareWallet`s paid, credited, refused and reversed
/// through the real statement checks, an issuer whose `mint` and `redemption` entries are made beside them,
/// and a sync that hands the book each wallet's new entries as the sync's verification would.
struct ClearingWorld {
    let issuerSigner: SoftwareSigner
    let issuerLog: KeyEventLog
    var wallets: [SoftwareWallet] = []
    /// The issuer's money entries (mint, redemption), in order; its ledger has no other kinds here.
    var issuerEntries: [LedgerEntry] = []
    /// The issuer's outstanding total, in cents.
    var outstanding: Int64 = 0
    /// Entries each wallet has synced (by index; the issuer at `wallets.count`).
    var synced: [Int: Int] = [:]
    /// The signed transfers sent, by order digest (the debit entry's statement digest).
    var sent: [Digest32: SignedTransfer] = [:]
    let store = InMemoryClearingStore()
    var time: Int64 = SoftwareWallet.startTime
    var random: SeededRandom

    var issuer: WalletID { issuerLog.walletID }
    var book: ClearingBook<InMemoryClearingStore> { ClearingBook(issuer: issuer, store: store) }
    var policy: TransferPolicy { TransferPolicy(trustedIssuers: [issuer], acceptsWithoutProximity: true) }

    init(wallets count: Int, seed: UInt64 = 1) throws {
        issuerSigner = try SoftwareSigner()
        issuerLog = try SoftwareWallet.issuerLog(of: issuerSigner)
        random = SeededRandom(seed: seed)
        for index in 0..<count { wallets.append(try SoftwareWallet(seed: seed &* 1000 &+ UInt64(index))) }
    }

    static func eur(_ cents: Int64) -> Money { try! Money(minorUnits: cents, currency: .eur) }

    /// The log of any wallet of the world.
    func log(_ id: WalletID) -> KeyEventLog? {
        id == issuer ? issuerLog : wallets.first { $0.walletID == id }?.log
    }

    /// The issuer mints `cents` to wallet `index`, which deposits it.
    mutating func mint(_ cents: Int64, to index: Int) throws {
        let id = VoucherID(bytes: random.bytes(16))!
        let (voucher, _) = try SoftwareWallet.voucher(
            Self.eur(cents), to: wallets[index].walletID, issuer: issuerSigner, id: id)
        try appendIssuer(
            kind: .mint, amount: voucher.payload.assetAmount, counterparty: wallets[index].walletID,
            statement: voucher.statementReference, payload: voucher.encoded)
        outstanding &+= cents
        let verdict = VoucherCheck.evaluate(
            voucher, issuerLog: issuerLog, walletID: wallets[index].walletID, trustedIssuers: [issuer],
            state: wallets[index].state)
        try #require(try wallets[index].carryOut(verdict) != nil)
    }

    private mutating func appendIssuer(
        kind: EntryKind, flags: EntryFlags = [], amount: AssetAmount, counterparty: WalletID,
        statement: StatementReference, payload: [UInt8]
    ) throws {
        time += 1000
        issuerEntries.append(
            try LedgerEntry(
                position: UInt64(issuerEntries.count + 1), id: statement.id, kind: kind, flags: flags, amount: amount,
                counterparty: counterparty.bytes, time: time, statement: statement, payload: payload,
                previousLink: ListHead.empty.digest))
    }

    /// Wallet `payer` pays `cents` to wallet `payee` (or to the issuer when `payee` is nil); returns the transfer.
    mutating func pay(_ cents: Int64, from payer: Int, to payee: Int?) throws -> SignedTransfer {
        let target = payee.map { wallets[$0].walletID } ?? issuer
        let transfer = try wallets[payer].pay(target, amount: Self.eur(cents))
        sent[transfer.payload.order.digest] = transfer
        return transfer
    }

    /// The payee credits `transfer`; the issuer records a redemption when it is the payee.
    mutating func credit(_ transfer: SignedTransfer, by payee: Int?) throws {
        guard let payee else {
            let order = transfer.payload.order
            try appendIssuer(
                kind: .redemption, flags: [.withoutProximity], amount: order.amount, counterparty: order.payerWalletID,
                statement: transfer.statementReference, payload: transfer.encoded)
            outstanding -= order.amount.money.minorUnits
            return
        }
        let verdict = TransferCheck.evaluate(
            transfer, walletID: wallets[payee].walletID, payerLog: wallets[payeeIndex(of: transfer)].log,
            state: wallets[payee].state, policy: policy)
        try #require(try wallets[payee].carryOut(verdict)?.kind == .paymentIn)
    }

    private func payeeIndex(of transfer: SignedTransfer) -> Int {
        wallets.firstIndex { $0.walletID == transfer.payload.order.payerWalletID }!
    }

    /// The payee refuses `transfer` and the payer reverses its debit.
    mutating func refuse(_ transfer: SignedTransfer, by payee: Int) throws -> SignedRefusal {
        let refusal = try wallets[payee].refusal(of: transfer, reason: .debitMismatch)
        let payer = payeeIndex(of: transfer)
        let verdict = RefusalCheck.evaluate(
            refusal, of: transfer, payeeLog: wallets[payee].log, state: wallets[payer].state)
        try #require(try wallets[payer].carryOut(verdict)?.kind == .reversal)
        return refusal
    }

    /// The entries wallet `index` has not synced, as the sync's verification hands them over.
    func pending(_ index: Int) -> [SyncedEntry] {
        wallets[index].entries[(synced[index] ?? 0)...].map { entry in
            SyncedEntry(
                position: entry.position, entry: entry,
                transfer: entry.kind == .paymentOut ? entry.statement.flatMap { sent[$0.payloadDigest] } : nil)
        }
    }

    /// Syncs wallet `index` (the issuer when nil) at `now`.
    @discardableResult
    mutating func sync(_ index: Int?, now: Int64? = nil) throws -> RecordResult {
        let at = now ?? time
        guard let index else {
            let from = synced[wallets.count] ?? 0
            let entries = issuerEntries[from...].map { SyncedEntry(position: $0.position, entry: $0, transfer: nil) }
            synced[wallets.count] = issuerEntries.count
            return try book.record(
                wallet: issuer, entries: entries, checkpoint: try issuerCheckpoint(), now: at, logs: log)
        }
        let entries = pending(index)
        synced[index] = wallets[index].entries.count
        return try book.record(
            wallet: wallets[index].walletID, entries: entries, checkpoint: try wallets[index].checkpoint(), now: at,
            logs: log)
    }

    /// The issuer's checkpoint: its outstanding total as its balance.
    func issuerCheckpoint() throws -> SignedCheckpoint {
        let balances = outstanding > 0 ? [AssetAmount(issuer: issuer, money: Self.eur(outstanding))] : []
        return try Checkpoint(
            walletID: issuer, walletKey: issuerSigner.publicKey, keySequence: 0, keyEventPosition: 0,
            size: UInt64(issuerEntries.count + 1), root: ListHead.empty.digest, head: ListHead.empty.digest,
            time: time, snapshot: LedgerSnapshot(balances: balances, windowTotals: []), index: ListHead.empty.digest
        ).sign(with: issuerSigner)
    }

    func matches() -> Set<TransferKey> { store.allMatches() }
}
