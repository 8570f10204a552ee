import SecureCore
import SecureCrypto
import SecureTestSupport

// Ledger history for benchmark fixtures; SecureWallet's `@_spi(Benchmark)` batch append loads it. It holds
// no key: it asks a `MessageSigner` for its vouchers' signatures (a token key in `secure-bench ledger`, the
// test-only software signer in `secure-bench fixtures verify`).

/// A deterministic stream of ordinary wallet history: a budget, then every `depositInterval`th entry a
/// deposit of a signed issuer voucher, and otherwise payments out of 1.00 to 99.99 EUR to a few payees
/// in a few categories (one budgeted). The entries are what the real wallet steps record: a debit's
/// payload is its transfer order, a deposit's the signed voucher, so sizes and replay work are realistic.
public struct SyntheticHistory {
    /// One deposit per this many entries keeps the voucher signatures (on a token: milliseconds each) few.
    public static let depositInterval: UInt64 = 10_000
    /// Where the history starts: entry 0 is the inception event and entry 1 the budget (`budgetDraft`).
    public static let firstPosition: UInt64 = 2
    /// Each deposit covers far more than the payments until the next one (at most 99.99 EUR each).
    static let depositMinorUnits: Int64 = 100_000_000
    static let categories = ["food", "rent", "travel", "tools"]
    static let notes = ["", "coffee", "groceries", "train ticket", "monthly rent"]

    private let walletID: WalletID
    private let payerKey: P256.PublicKey
    private let issuer: MessageSigner
    private let payees: [WalletID]
    private var random: SeededRandom
    private var issuerSequence: UInt64 = 0
    /// The issuer's wallet id: its one-event issuer log is made (one signature) at the first deposit.
    private var issuerID: WalletID?

    /// The history of the wallet `walletID` whose signing key is `payerKey`; vouchers are signed by
    /// `issuer`. The same seed gives the same amounts, payees and categories (ids stay random).
    public init(walletID: WalletID, payerKey: P256.PublicKey, issuer: MessageSigner, seed: UInt64 = 1) {
        self.walletID = walletID
        self.payerKey = payerKey
        self.issuer = issuer
        random = SeededRandom(seed: seed)
        payees = (0..<8).map { WalletID(bytes: SHA256.hash(Array("payee-\($0)".utf8)))! } // SHA-256: 32 bytes
    }

    /// The budget the history spends under: "food", monthly, with a limit no fixture reaches.
    public static func budgetDraft() throws -> EntryDraft {
        let limit = try Money(minorUnits: 1_000_000_000_000, currency: .eur)
        let budget = try Budget(
            category: "food", limit: limit, window: .month, isHardCap: false, timeZoneIdentifier: "UTC")
        return EntryDraft(
            kind: .budgetChange, amount: nil, category: "food", statement: nil,
            payload: BudgetChange.set(budget).payload)
    }

    /// The drafts for positions [from, from + count), from ≥ `firstPosition`: a deposit at the first
    /// position and every `depositInterval` after it, so every payment is covered.
    public mutating func drafts(from: UInt64, count: Int) throws -> [EntryDraft] {
        precondition(from >= Self.firstPosition, "the history starts after the inception event and the budget")
        var drafts: [EntryDraft] = []
        drafts.reserveCapacity(count)
        for position in from..<(from + UInt64(count)) {
            drafts.append((position - Self.firstPosition) % Self.depositInterval == 0 ? try deposit() : try payment())
        }
        return drafts
    }

    private mutating func deposit() throws -> EntryDraft {
        issuerSequence += 1
        let issuerID: WalletID
        if let known = self.issuerID {
            issuerID = known
        } else {
            issuerID = try TestIssuer(signer: issuer).walletID
            self.issuerID = issuerID
        }
        let voucher = try Voucher(
            issuerWalletID: issuerID, issuerKey: issuer.publicKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: issuerSequence + 1),
            recipientWalletID: walletID, amount: try Money(minorUnits: Self.depositMinorUnits, currency: .eur),
            voucherID: .random())
        let signed = try voucher.sign(with: issuer)
        // As VoucherCheck.evaluate builds it for an accepted voucher.
        return EntryDraft(
            kind: .deposit, amount: voucher.assetAmount, counterparty: issuerID.bytes,
            statement: signed.statementReference, payload: signed.encoded)
    }

    private mutating func payment() throws -> EntryDraft {
        let value = random.next()
        let order = try TransferOrder(
            transferID: .random(), payerWalletID: walletID, payerKey: payerKey,
            payeeWalletID: payees[Int(value % 8)],
            amount: AssetAmount(
                issuer: issuerID!, money: try Money(minorUnits: Int64(100 + (value >> 8) % 9_900), currency: .eur)),
            proximity: .none, channelBinding: [])
        return order.debitDraft(
            category: Self.categories[Int((value >> 24) % 4)], note: Self.notes[Int((value >> 32) % 5)])
    }
}
