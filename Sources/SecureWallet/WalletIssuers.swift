import SecureCore
import SecureCrypto
import SecureStore

/// Issuers: which ones this wallet trusts (signed `settings` entries), and, in an issuer's own wallet, the
/// vouchers it mints (a `mint` entry each: a liability, never spendable money).
extension Wallet {
    /// Whether this wallet was incepted as an issuer.
    public var isIssuer: Bool { keyLog.isIssuer }

    /// The issuers this wallet trusts: derived from its signed trust and untrust entries, in ledger order.
    public func trustedIssuers() throws -> Set<WalletID> { state.settings.trustedIssuers }

    /// Trusts the issuer a card names: its log must be an issuer's, and is kept (and followed from then on);
    /// the signed entry records the log head this wallet verified. Trusting an issuer trusted already
    /// appends nothing and returns nil, but a newer card (a longer log, after the issuer rotated) is
    /// followed: the trust names the issuer's wallet id, so its new key is trusted without a new entry. A
    /// card whose log neither extends nor is part of the log this wallet follows is refused.
    @discardableResult
    public func trust(issuer card: WalletCard) throws -> LedgerEntry? {
        guard !isIssuer else {
            throw WalletError(.invalidInput, "an issuer's wallet holds no other issuer's money, so it trusts none")
        }
        guard card.log.isIssuer else {
            throw WalletError(
                .invalidInput,
                "the card is wallet \(card.walletID.hex), which was not incepted as an issuer; only an issuer's card "
                    + "can be trusted for deposits")
        }
        guard card.walletID != walletID else { throw WalletError(.invalidInput, "a wallet cannot trust itself") }
        switch try followKeyEvents(of: card.walletID, events: card.log.events) {
        case .followed: break
        case .conflict:
            throw WalletError(
                .refused, "the card's key-event log conflicts with the one this wallet follows; kept as fork evidence")
        case .refused(let error):
            // An older card (its head is an event of the known log) teaches nothing new and is no error.
            if let known = try peerKeyLog(of: card.walletID), !known.contains(card.log.head) {
                throw WalletError(
                    .refused,
                    "the card's key-event log does not extend the one this wallet follows for issuer "
                        + "\(card.walletID.hex): \(error.message)")
            }
        }
        guard try !trustedIssuers().contains(card.walletID) else { return nil }
        let log = try peerKeyLog(of: card.walletID) ?? card.log
        let change = IssuerTrustChange.trust(card.walletID, head: log.head)
        return try appendDraft(
            EntryDraft(
                kind: .settings, amount: nil, statement: nil, payload: change.encoded))
    }

    /// Stops trusting an issuer: no new deposit or credit of its asset. Money of it already held stays and
    /// can still be spent. Returns nil when the issuer was not trusted.
    @discardableResult
    public func untrust(issuer id: WalletID) throws -> LedgerEntry? {
        guard try trustedIssuers().contains(id) else { return nil }
        return try appendDraft(
            EntryDraft(
                kind: .settings, amount: nil, statement: nil,
                payload: IssuerTrustChange.untrust(id).encoded))
    }

    /// Mints a voucher for the wallet a card names: one `mint` entry records the signed voucher as a liability
    /// (the outstanding total grows by `amount`), and the envelope carries the voucher with this issuer's log.
    public func mint(to card: WalletCard, amount: Money) throws -> Envelope {
        guard isIssuer else {
            throw WalletError(
                .invalidInput, "this wallet is not an issuer; make one with `secure issuer init` to mint vouchers")
        }
        guard card.walletID != walletID else { throw WalletError(.invalidInput, "an issuer cannot mint to itself") }
        guard !card.log.isIssuer else {
            throw WalletError(.invalidInput, "the card is an issuer's; vouchers go to wallets that hold money")
        }
        _ = try followKeyEvents(of: card.walletID, events: card.log.events)
        var voucher: SignedVoucher?
        let issuerKey = signingKey
        let event = keyEvent.event
        let signer = try signer
        try append { position, previous, time in
            let payload = try Voucher(
                issuerWalletID: walletID, issuerKey: issuerKey,
                keyDate: try KeyDate(
                    keySequence: event.sequence, keyEventPosition: event.ledgerPosition, ledgerSize: position + 1),
                recipientWalletID: card.walletID, amount: amount, voucherID: .random())
            let signed = try payload.sign(with: signer)
            voucher = signed
            return try EntryDraft(
                kind: .mint, amount: payload.assetAmount, counterparty: card.walletID.bytes,
                statement: signed.statementReference, payload: signed.encoded
            ).entry(position: position, id: StatementID(payload.voucherID), time: time, previousLink: previous)
        }
        return Envelope(voucher!, issuerLog: keyLog)
    }

    /// Deposits the voucher in an envelope: `deposit(_:issuerLog:)` with the issuer's log from it.
    public func deposit(_ envelope: Envelope) throws -> StatementOutcome {
        let (voucher, log) = try envelope.voucher()
        return try deposit(voucher, issuerLog: log)
    }

    /// The assets held in `amount`'s currency, to pick the one a payment moves: `issuer` when given (an
    /// issuer id, or a unique prefix of its hex), else the only asset of that currency this wallet holds.
    /// A payment to an issuer pays back its own asset.
    public func asset(for amount: Money, issuer: String?, payee: WalletID? = nil) throws -> AssetAmount {
        let held = state.balances.filter { $0.key.currency == amount.currency }.keys.sorted()
        if let issuer {
            let wanted = issuer.lowercased()
            let matches = held.filter { $0.issuer.hex.hasPrefix(wanted) }
            guard matches.count == 1 else {
                throw WalletError(
                    .invalidInput,
                    matches.isEmpty
                        ? "this wallet holds no \(amount.currency) of an issuer \(issuer)…"
                        : "--issuer \(issuer) matches \(matches.count) issuers; give more of the id")
            }
            return AssetAmount(issuer: matches[0].issuer, money: amount)
        }
        if let payee, held.contains(where: { $0.issuer == payee }) { return AssetAmount(issuer: payee, money: amount) }
        let positive = held.filter { !state.balance($0).isZero }
        switch positive.count {
        case 0:
            throw WalletError(
                .refused,
                "this wallet holds no \(amount.currency) to pay \(amount) with (`secure balance` lists what it holds)")
        case 1: return AssetAmount(issuer: positive[0].issuer, money: amount)
        default:
            let list = positive.map { "\($0.issuer.hex.prefix(8)) (\(state.balance($0)))" }.joined(separator: ", ")
            throw WalletError(
                .invalidInput,
                "this wallet holds \(amount.currency) of \(positive.count) issuers: \(list); "
                    + "pick one with --issuer ID (a payment moves one asset)")
        }
    }

    /// The asset a payee requests `amount` in: `issuer` when given (a trusted issuer's id or a unique prefix
    /// of its hex), else the only issuer this wallet trusts; an issuer requests its own asset.
    public func requestAsset(for amount: Money, issuer: String?) throws -> AssetAmount {
        if isIssuer { return AssetAmount(issuer: walletID, money: amount) }
        let trusted = try trustedIssuers().sorted { $0.hex < $1.hex }
        let candidates = issuer.map { prefix in trusted.filter { $0.hex.hasPrefix(prefix.lowercased()) } } ?? trusted
        guard candidates.count == 1 else {
            throw WalletError(
                .invalidInput,
                candidates.isEmpty
                    ? "this wallet trusts no issuer\(issuer.map { " " + $0 + "…" } ?? ""); a request names the asset it "
                        + "takes (`secure issuer trust CARD`)"
                    : "this wallet trusts \(candidates.count) issuers; pick the asset of the request with --issuer ID")
        }
        return AssetAmount(issuer: candidates[0], money: amount)
    }
}
