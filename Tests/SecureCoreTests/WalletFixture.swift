import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// A whole wallet in memory: ledger state, entries, Merkle tree and a software signer, able to deposit,
/// pay, credit and reverse with the real statement checks. Enough to run both sides of a payment.
struct TestWallet {
    let signer: SoftwareSigner
    let walletID: WalletID
    private(set) var state = LedgerState()
    private(set) var entries: [LedgerEntry] = []
    private(set) var tree = MerkleTree()
    var time = Fixture.time
    private var random: SeededRandom

    var key: P256.PublicKey { signer.publicKey }

    init(seed: UInt64) throws {
        signer = try SoftwareSigner()
        random = SeededRandom(seed: seed)
        let inception = KeyEvent.inception(
            signingKey: signer.publicKey, nextKey: signer.publicKey,
            agreementKey: signer.publicKey)
        walletID = WalletID(inception: inception)
        try append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: inception.encoded))
    }

    mutating func randomBytes(_ count: Int) -> [UInt8] { random.bytes(count) }

    @discardableResult
    mutating func append(_ draft: EntryDraft) throws -> LedgerEntry {
        time += 1000
        let entry = try draft.entry(
            position: state.size, id: .random(using: &random), time: time, previousLink: state.head)
        try state.apply(entry)
        entries.append(entry)
        tree.append(leafHash: Merkle.leafHash(entry.encoded))
        return entry
    }

    func checkpoint() throws -> SignedCheckpoint {
        try Checkpoint(
            walletID: walletID, walletKey: key, keySequence: 0, keyEventPosition: 0, state: state, root: tree.root(),
            time: time
        ).sign(with: signer)
    }

    func balance(_ units: Int64 = 0) -> Money { state.balance(.eur) }

    /// The date of a signature made now: the inception's key, at the ledger's size.
    var keyDate: KeyDate { try! KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: state.size) }

    /// Carries out a verdict: appends what it says to append, returns the entry it names.
    @discardableResult
    mutating func carryOut(_ verdict: StatementVerdict) throws -> LedgerEntry? {
        switch verdict {
        case .accept(let draft), .conflict(let draft), .refuse(_, let draft): return try append(draft)
        case .duplicate(let position): return entries[Int(position)]
        case .policyRefusal, .drop: return nil
        }
    }

    /// Mints to this wallet with `issuer` and deposits.
    mutating func deposit(_ units: Int64, issuer: SoftwareSigner) throws {
        let voucher = try Voucher(
            issuerKey: issuer.publicKey, recipientWalletID: walletID, amount: Fixture.eur(units),
            voucherID: .random(using: &random), issuerSequence: 1
        ).sign(with: issuer)
        let verdict = VoucherCheck.evaluate(
            voucher, walletID: walletID, trustedIssuers: [issuer.publicKey],
            state: state)
        guard case .accept = verdict else { Issue.record("deposit refused: \(verdict)"); return }
        try carryOut(verdict)
    }

    /// The order for paying `payee`.
    mutating func order(to payee: WalletID, units: Int64, proximity: Proximity = .none, binding: [UInt8] = [])
        throws -> TransferOrder
    {
        try TransferOrder(
            transferID: .random(using: &random), payerWalletID: walletID, payerKey: key, payeeWalletID: payee,
            amount: Fixture.eur(units), proximity: proximity, channelBinding: binding)
    }

    /// Appends the debit for `order` and returns the signed transfer that carries it.
    mutating func commit(_ order: TransferOrder, category: String = "") throws -> SignedTransfer {
        let debit = try append(order.debitDraft(category: category))
        let proof = tree.inclusionProof(index: debit.position)
        return try Transfer(order: order, checkpoint: checkpoint(), debitLeaf: debit.encoded, inclusionProof: proof)
            .sign(with: signer)
    }

    mutating func pay(_ payee: WalletID, units: Int64, proximity: Proximity = .none, binding: [UInt8] = [])
        throws -> SignedTransfer
    {
        try commit(order(to: payee, units: units, proximity: proximity, binding: binding))
    }
}

/// Every strict prefix of a valid encoding decodes to nil or throws; every extension throws; and the top
/// bit of every byte flipped is refused (a `FormatError`, or nil when a length grew past the end) or
/// decodes to another value: no two encodings give one value. `decode` must accept the full encoding.
func sweepEncoding<T: Equatable>(_ bytes: [UInt8], _ name: String, decode: ([UInt8]) throws -> T?) {
    let original = try? decode(bytes)
    #expect(original != nil, "\(name): the full encoding decodes")
    for length in 0..<bytes.count {
        let result = Result { try decode(Array(bytes.prefix(length))) }
        if case .success(let value) = result, value != nil {
            Issue.record("\(name): the \(length)-byte prefix decoded")
        }
    }
    #expect(throws: FormatError.self, "\(name): an extension is refused") { _ = try decode(bytes + [0]) }
    for index in bytes.indices {
        var flipped = bytes
        flipped[index] ^= 0x80
        do {
            let decoded = try decode(flipped)
            #expect(decoded == nil || decoded != original, "\(name): a flip at byte \(index) decoded to the same value")
        } catch {
            #expect(error is FormatError, "\(name): a flip at byte \(index) threw \(error)")
        }
    }
}
