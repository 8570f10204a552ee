import SecureCore
import SecureCrypto

/// TEST SUPPORT ONLY. A whole wallet in memory: ledger state, entries, Merkle tree and a software signer,
/// able to deposit, pay, credit and reverse with the real statement checks; enough to run both sides of a
/// payment. It is also the forger of the sound-money tests: a hostile user with a software P-256 key, who
/// can claim another wallet's id (`claiming:`), fund itself from nothing (`fundFromNothing`) and sign
/// transfers and refusals under any wallet id. Nothing honest uses it.
public struct SoftwareWallet {
    /// 2024-03-01T12:00:00Z: where the wallet's clock starts; each entry is a second later.
    public static let startTime: Int64 = 1_709_294_400_000

    /// The key in force: the inception's, or the last rotation's (`rotate()`).
    public private(set) var signer: SoftwareSigner
    /// The key the last event committed to, which the next rotation puts in force.
    private var nextSigner: SoftwareSigner
    /// The wallet id its checkpoints and transfers name: its own, or the one it claims.
    public let walletID: WalletID
    /// Its own key-event log: the inception and its rotations. For a forger claiming another id, this log is
    /// its own wallet's, which is not the claimed one.
    public private(set) var log: KeyEventLog
    public private(set) var state = LedgerState()
    public private(set) var entries: [LedgerEntry] = []
    public private(set) var tree = MerkleTree()
    public var time = SoftwareWallet.startTime
    private var random: SeededRandom
    /// The ML-KEM-1024 contact key the event in force names (`KeyEvent.contactKeyDigest`), made from seeds of
    /// its own seeded stream, so adding it left the ids of `random` as they were.
    public private(set) var contactKey: MLKEM1024.PrivateKey
    private var contactRandom: SeededRandom

    /// The signing key.
    public var key: P256.PublicKey { signer.publicKey }

    /// A wallet of its own, or, with `claiming`, a forger whose checkpoints and transfers name that id.
    /// `keys` fixes the signing key and the next key (the fuzz targets need the same keys in every process);
    /// by default both are fresh random keys.
    public init(
        seed: UInt64, claiming claimed: WalletID? = nil, keys: (signer: SoftwareSigner, next: SoftwareSigner)? = nil
    ) throws {
        signer = try keys?.signer ?? SoftwareSigner()
        nextSigner = try keys?.next ?? SoftwareSigner()
        random = SeededRandom(seed: seed)
        contactRandom = SeededRandom(seed: seed ^ 0xc0_47ac_7000_5eed)
        contactKey = try MLKEM1024.PrivateKey(seed: SecretBytes(contactRandom.bytes(MLKEM1024.seedByteCount)))
        let inception = KeyEvent.inception(
            signingKey: signer.publicKey, nextKey: nextSigner.publicKey, agreementKey: signer.publicKey,
            contactKeyDigest: KeyEvent.contactKeyDigest(of: contactKey.publicKey))
        walletID = claimed ?? WalletID(inception: inception)
        log = try KeyEventLog(inception: try SignedKeyEvent(inception, signer: signer))
        try append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: inception.encoded))
    }

    /// Seeded random bytes.
    public mutating func randomBytes(_ count: Int) -> [UInt8] { random.bytes(count) }

    /// Appends a draft at the next position, a second after the last entry.
    @discardableResult
    public mutating func append(_ draft: EntryDraft) throws -> LedgerEntry {
        time += 1000
        let entry = try draft.entry(
            position: state.size, id: .random(using: &random), time: time, previousLink: state.head)
        try state.apply(entry)
        entries.append(entry)
        tree.append(leafHash: Merkle.leafHash(entry.encoded))
        return entry
    }

    /// A checkpoint of the ledger as it stands, signed by the key in force. Its index commitment D is of the
    /// statement rows its entries would write (it keeps no `outgoing` rows); peers never read D.
    public func checkpoint() throws -> SignedCheckpoint {
        try Checkpoint(
            walletID: walletID, walletKey: key, keySequence: log.current.sequence,
            keyEventPosition: log.current.ledgerPosition, state: state, root: tree.root(), time: time,
            index: LedgerIndex.digest(statements: entries.compactMap(LedgerIndex.statementRow(of:)), outgoing: [])
        ).sign(with: signer)
    }

    /// The balance in euros, over every issuer's euros held.
    public func balance() -> Money {
        let units = state.balances.filter { $0.key.currency == .eur }.values.reduce(Int64(0)) { $0 + $1.minorUnits }
        return try! Money(minorUnits: units, currency: .eur)
    }

    /// The asset a payment of `amount` moves: the first held asset of its currency that covers it, else the
    /// first of its currency, else this wallet's own id as issuer (a forger's money from nowhere).
    public func asset(_ amount: Money) -> AssetAmount {
        let held = state.balances.filter { $0.key.currency == amount.currency }.sorted { $0.key < $1.key }
        let issuer = (held.first { $0.value >= amount } ?? held.first)?.key.issuer ?? walletID
        return AssetAmount(issuer: issuer, money: amount)
    }

    /// The key-event log of an issuer whose only key is `signer`: incepted as an issuer, never rotated.
    public static func issuerLog(of signer: SoftwareSigner) throws -> KeyEventLog {
        try KeyEventLog(
            inception: try SignedKeyEvent(
                KeyEvent.inception(
                    signingKey: signer.publicKey, nextKey: signer.publicKey, agreementKey: signer.publicKey,
                    issuer: true), signer: signer))
    }

    /// A voucher for `recipient` signed by the issuer whose only key is `issuer`, dated at its ledger size 2.
    public static func voucher(_ amount: Money, to recipient: WalletID, issuer: SoftwareSigner, id: VoucherID)
        throws -> (SignedVoucher, KeyEventLog)
    {
        let log = try issuerLog(of: issuer)
        let voucher = try Voucher(
            issuerWalletID: log.walletID, issuerKey: issuer.publicKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 2), recipientWalletID: recipient,
            amount: amount, voucherID: id
        ).sign(with: issuer)
        return (voucher, log)
    }

    /// Rotates to the key the last event committed to, recording the rotation at the next position (the
    /// first entry the new key signs), countersigned by the retiring key; a new contact key comes with it.
    public mutating func rotate() throws {
        let incoming = nextSigner
        let committed = try SoftwareSigner()
        let newContactKey = try MLKEM1024.PrivateKey(
            seed: SecretBytes(contactRandom.bytes(MLKEM1024.seedByteCount)))
        let event = KeyEvent.rotation(
            after: log.current, signingKey: incoming.publicKey, nextKey: committed.publicKey,
            agreementKey: incoming.publicKey, ledgerPosition: state.size,
            contactKeyDigest: KeyEvent.contactKeyDigest(of: newContactKey.publicKey))
        try log.append(try SignedKeyEvent(event, signer: incoming, previous: signer))
        try append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: event.encoded))
        signer = incoming
        nextSigner = committed
        contactKey = newContactKey
    }

    /// The date of a signature made now: the key in force, at the ledger's size.
    public var keyDate: KeyDate {
        // The ledger holds the entry of the key's own event, so its size is past that event's position.
        try! KeyDate(
            keySequence: log.current.sequence, keyEventPosition: log.current.ledgerPosition, ledgerSize: state.size)
    }

    /// Carries out a verdict: appends what it says to append, returns the entry it names.
    @discardableResult
    public mutating func carryOut(_ verdict: StatementVerdict) throws -> LedgerEntry? {
        switch verdict {
        case .accept(let draft), .conflict(let draft), .refuse(_, let draft): return try append(draft)
        case .duplicate(let position): return entries[Int(position)]
        case .policyRefusal, .drop: return nil
        }
    }

    /// Mints to this wallet with `issuer` and deposits through the real voucher check.
    public mutating func deposit(_ amount: Money, issuer: SoftwareSigner) throws {
        let (voucher, log) = try SoftwareWallet.voucher(
            amount, to: walletID, issuer: issuer, id: .random(using: &random))
        let verdict = VoucherCheck.evaluate(
            voucher, issuerLog: log, walletID: walletID, trustedIssuers: [log.walletID], state: state)
        guard case .accept = verdict else { throw FormatError(.invalidValue, "the deposit was refused: \(verdict)") }
        try carryOut(verdict)
    }

    /// The forger's money from nowhere: a deposit entry whose statement no issuer signed. Its own ledger
    /// accepts it (the ledger rules do not re-check vouchers); nobody else should.
    public mutating func fundFromNothing(_ amount: Money, issuer: WalletID? = nil) throws {
        let statement = StatementReference(
            signer: key.fingerprintDigest, id: .random(using: &random), payloadDigest: .random(using: &random))
        try append(
            EntryDraft(
                kind: .deposit, amount: AssetAmount(issuer: issuer ?? walletID, money: amount), statement: statement,
                payload: []))
    }

    /// The order for paying `payee`.
    public mutating func order(
        to payee: WalletID, amount: Money, proximity: Proximity = .none, binding: [UInt8] = []
    ) throws -> TransferOrder {
        try TransferOrder(
            transferID: .random(using: &random), payerWalletID: walletID, payerKey: key, payeeWalletID: payee,
            amount: asset(amount), proximity: proximity, channelBinding: binding)
    }

    /// Appends the debit for `order` and returns the signed transfer that carries it.
    public mutating func commit(_ order: TransferOrder, category: String = "") throws -> SignedTransfer {
        let debit = try append(order.debitDraft(category: category))
        let proof = tree.inclusionProof(index: debit.position)
        return try Transfer(order: order, checkpoint: checkpoint(), debitLeaf: debit.encoded, inclusionProof: proof)
            .sign(with: signer)
    }

    /// Pays `payee`: the debit and its signed transfer.
    public mutating func pay(_ payee: WalletID, amount: Money, proximity: Proximity = .none, binding: [UInt8] = [])
        throws -> SignedTransfer
    {
        try commit(order(to: payee, amount: amount, proximity: proximity, binding: binding))
    }

    /// A refusal of `transfer` signed by this wallet's key, naming the transfer's payee (whoever that is).
    public func refusal(of transfer: SignedTransfer, reason: RefusalReason) throws -> SignedRefusal {
        try Refusal(refusing: transfer, payeeKey: key, keyDate: keyDate, reason: reason).sign(with: signer)
    }
}
