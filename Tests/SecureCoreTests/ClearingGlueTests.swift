import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The issuer's own ledger for the glue's tests: an issuer inception at entry 0, then one `mint` entry per
/// voucher, each voucher dated at its mint's ledger size, as `secure mint` writes them.
struct GlueIssuer {
    let signer: SoftwareSigner
    let log: KeyEventLog
    var state = LedgerState()
    var entries: [LedgerEntry] = []
    var tree = MerkleTree()
    var time = SoftwareWallet.startTime
    var random = SeededRandom(seed: 77)

    var walletID: WalletID { log.walletID }

    init() throws {
        signer = try SoftwareSigner()
        log = try SoftwareWallet.issuerLog(of: signer)
        try append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: log.events[0].encoded))
    }

    mutating func append(_ draft: EntryDraft) throws {
        time += 1000
        let entry = try draft.entry(
            position: state.size, id: .random(using: &random), time: time, previousLink: state.head)
        try state.apply(entry)
        entries.append(entry)
        tree.append(leafHash: Merkle.leafHash(entry.encoded))
    }

    /// Mints `amount` to `recipient`: the mint entry, and the voucher it records.
    mutating func mint(_ amount: Money, to recipient: WalletID) throws -> SignedVoucher {
        let voucher = try Voucher(
            issuerWalletID: walletID, issuerKey: signer.publicKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: state.size + 1),
            recipientWalletID: recipient, amount: amount, voucherID: .random(using: &random)
        ).sign(with: signer)
        try append(
            EntryDraft(
                kind: .mint, amount: voucher.payload.assetAmount, counterparty: recipient.bytes,
                statement: voucher.statementReference, payload: voucher.encoded))
        return voucher
    }

    func checkpoint() throws -> SignedCheckpoint {
        try Checkpoint(
            walletID: walletID, walletKey: signer.publicKey, keySequence: 0, keyEventPosition: 0, state: state,
            root: tree.root(), time: time,
            index: LedgerIndex.digest(statements: entries.compactMap(LedgerIndex.statementRow(of:)), outgoing: [])
        ).sign(with: signer)
    }
}

/// What one ledger sends for a sync: the chunks and the close request.
struct GlueUpload {
    var chunks: [SyncChunk]
    var close: SyncClose
}

/// A clearing over the in-memory store, its issuer, and `SoftwareWallet`s that pay each other through the real
/// statement checks; each sync goes through `Clearing.sync` exactly as the service runs it.
struct GlueWorld {
    var issuer: GlueIssuer
    var wallets: [SoftwareWallet] = []
    /// Transfers each payer signed, by transfer id (the sync's `sentTransfer` source).
    var sent: [TransferID: SignedTransfer] = [:]
    let store = InMemoryClearingStore()
    let clearing: Clearing<InMemoryClearingStore>
    var now: Int64 = SoftwareWallet.startTime + 1_000_000

    static func eur(_ cents: Int64) -> Money { try! Money(minorUnits: cents, currency: .eur) }
    var issuerID: WalletID { issuer.walletID }
    var policy: TransferPolicy { TransferPolicy(trustedIssuers: [issuerID], acceptsWithoutProximity: true) }

    init(wallets count: Int, seed: UInt64 = 1) throws {
        issuer = try GlueIssuer()
        clearing = Clearing(issuerLog: issuer.log, store: store)
        for index in 0..<count { wallets.append(try SoftwareWallet(seed: seed &* 1000 &+ UInt64(index))) }
    }

    /// The issuer mints `cents` to wallet `index`, which deposits it through the real voucher check.
    mutating func fund(_ index: Int, _ cents: Int64) throws {
        let voucher = try issuer.mint(Self.eur(cents), to: wallets[index].walletID)
        let verdict = VoucherCheck.evaluate(
            voucher, issuerLog: issuer.log, walletID: wallets[index].walletID, trustedIssuers: [issuerID],
            state: wallets[index].state)
        try #require(try wallets[index].carryOut(verdict)?.kind == .deposit)
    }

    /// Wallet `payer` pays `payee`, which credits it unless `credited` is false.
    @discardableResult
    mutating func pay(_ cents: Int64, from payer: Int, to payee: Int, credited: Bool = true) throws -> SignedTransfer {
        let transfer = try wallets[payer].pay(wallets[payee].walletID, amount: Self.eur(cents))
        sent[transfer.payload.order.transferID] = transfer
        if credited { try credit(transfer, payer: wallets[payer], by: payee) }
        return transfer
    }

    mutating func credit(_ transfer: SignedTransfer, payer: SoftwareWallet, by payee: Int) throws {
        let verdict = TransferCheck.evaluate(
            transfer, walletID: wallets[payee].walletID, payerLog: payer.log, state: wallets[payee].state,
            policy: policy)
        try #require(try wallets[payee].carryOut(verdict)?.kind == .paymentIn)
    }

    /// The upload of a ledger's entries from `from` on, its claim signed by `signer`.
    func upload(
        walletID: WalletID, entries: [LedgerEntry], log: KeyEventLog, tree: MerkleTree, signer: SoftwareSigner,
        checkpoint: SignedCheckpoint, from: UInt64
    ) throws -> GlueUpload {
        let sent = self.sent
        let all = try SyncEntry.make(entries, issuer: issuerID, sentTransfer: { sent[$0] })
        let map = OpaqueMap(items: all.map.items.filter { $0.position >= from })
        let session = SyncSessionID.random()
        var peers: [WalletID: KeyEventLog] = [:]
        for wallet in wallets where wallet.walletID != walletID { peers[wallet.walletID] = wallet.log }
        let chunks = SyncChunk.chunks(
            walletID: walletID, session: session, entries: Array(all.entries.dropFirst(Int(from))),
            keyEvents: from == 0 ? log.events : [], peerLogs: peers, entryCountMax: 3)
        let claim = try SyncClaim(
            walletID: walletID, walletKey: signer.publicKey, keyDate: KeyDate(checkpoint: checkpoint.checkpoint),
            issuer: issuerID, fromSize: from, toSize: checkpoint.checkpoint.size, opaqueMapDigest: map.digest,
            session: session
        ).sign(with: signer)
        let proof = from == 0 ? [] : tree.consistencyProof(oldSize: from)
        return GlueUpload(
            chunks: chunks,
            close: SyncClose(claim: claim, checkpoint: checkpoint, consistencyProof: proof, opaqueMap: map))
    }

    func upload(_ wallet: SoftwareWallet, checkpoint: SignedCheckpoint? = nil) throws -> GlueUpload {
        let from = try clearing.base(of: wallet.walletID) ?? 0
        return try upload(
            walletID: wallet.walletID, entries: wallet.entries, log: wallet.log, tree: wallet.tree,
            signer: wallet.signer, checkpoint: checkpoint ?? wallet.checkpoint(), from: from)
    }

    mutating func run(_ upload: GlueUpload, of wallet: WalletID) throws -> SyncCompletion {
        now += 1000
        return try clearing.sync(wallet: wallet, chunks: upload.chunks, close: upload.close, now: now)
    }

    /// Syncs the issuer's new entries; it is admitted first.
    @discardableResult
    mutating func syncIssuer() throws -> SyncCompletion {
        let request = AdmissionRequest(
            log: issuer.log, checkpoint: try issuer.checkpoint(), entry: issuer.entries[0], proof: [])
        #expect(try clearing.admit(request, now: now) == .admitted)
        let from = try clearing.base(of: issuerID) ?? 0
        let upload = try upload(
            walletID: issuerID, entries: issuer.entries, log: issuer.log, tree: issuer.tree, signer: issuer.signer,
            checkpoint: try issuer.checkpoint(), from: from)
        return try run(upload, of: issuerID)
    }

    /// The admission request of `wallet` naming its entry at `position`.
    func admission(_ wallet: SoftwareWallet, position: UInt64) throws -> AdmissionRequest {
        AdmissionRequest(
            log: wallet.log, checkpoint: try wallet.checkpoint(), entry: wallet.entries[Int(position)],
            proof: wallet.tree.inclusionProof(index: position))
    }

    /// Admits wallet `index` by its first money entry (position 1) and syncs it.
    @discardableResult
    mutating func sync(_ index: Int) throws -> SyncCompletion {
        if try clearing.base(of: wallets[index].walletID) == nil {
            #expect(try clearing.admit(try admission(wallets[index], position: 1), now: now) == .admitted)
        }
        return try run(try upload(wallets[index]), of: wallets[index].walletID)
    }

    func listings(unsyncedAfter: Int64 = 3_600_000) throws -> [Listing] {
        try clearing.book.listings(now: now, unsyncedAfter: unsyncedAfter)
    }

    func listed(_ wallet: WalletID, unsyncedAfter: Int64 = 3_600_000) throws -> Set<ListingGrounds> {
        Set(try listings(unsyncedAfter: unsyncedAfter).filter { $0.wallet == wallet }.map(\.grounds))
    }

    /// Every kept evidence against `wallet` verifies as proven.
    func expectProven(_ wallet: WalletID, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let evidence = try store.allEvidence().filter { $0.evidence.bannedWallet == wallet }
        #expect(!evidence.isEmpty, "no evidence kept", sourceLocation: sourceLocation)
        for record in evidence {
            #expect(record.evidence.verify().isProven, "\(record.evidence)", sourceLocation: sourceLocation)
        }
        #expect(try listed(wallet).contains(.proven), sourceLocation: sourceLocation)
    }

    func expectResidueZero(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reports = try clearing.book.conservation(now: now, unsyncedAfter: 3_600_000)
        #expect(!reports.isEmpty, sourceLocation: sourceLocation)
        for report in reports {
            #expect(report.residue == 0, "\(report)", sourceLocation: sourceLocation)
            #expect(report.walletsWithResidue.isEmpty, "\(report)", sourceLocation: sourceLocation)
        }
    }
}

func isAccepted(_ completion: SyncCompletion) -> Bool {
    if case .accepted = completion { return true }
    return false
}

@Suite("Clearing glue: admission and syncs through Clearing<InMemoryClearingStore>")
struct ClearingGlueTests {
    @Test("admission: the issuer, a minted deposit and a credit from a known wallet; nothing stored when refused")
    func admission() throws {
        var world = try GlueWorld(wallets: 4)
        try world.fund(0, 10_000)
        #expect(isAccepted(try world.syncIssuer()))
        #expect(try world.clearing.base(of: world.issuerID) == 2)
        #expect(
            try world.clearing.admit(try world.admission(world.wallets[0], position: 1), now: world.now) == .admitted)
        #expect(try world.clearing.base(of: world.wallets[0].walletID) == 0)

        // A voucher the issuer signed but whose mint its synced ledger does not hold yet.
        try world.fund(1, 5_000)
        let early = try world.clearing.admit(try world.admission(world.wallets[1], position: 1), now: world.now)
        guard case .refused = early else { Issue.record("an unsynced mint admitted: \(early)"); return }
        #expect(try world.clearing.base(of: world.wallets[1].walletID) == nil)
        #expect(try world.store.log(world.wallets[1].walletID) == nil)
        #expect(try world.run(try world.upload(world.wallets[1]), of: world.wallets[1].walletID) == .notAdmitted)

        // A credit from a wallet this clearing does not know (wallet 1 is not admitted).
        let transfer = try world.pay(1_000, from: 1, to: 2)
        #expect(transfer.payload.order.payeeWalletID == world.wallets[2].walletID)
        let unknown = try world.clearing.admit(try world.admission(world.wallets[2], position: 1), now: world.now)
        guard case .refused = unknown else { Issue.record("a credit from an unknown wallet admitted"); return }
        #expect(try world.clearing.base(of: world.wallets[2].walletID) == nil)

        // A credit from an admitted wallet admits its payee.
        try world.pay(2_000, from: 0, to: 3)
        #expect(
            try world.clearing.admit(try world.admission(world.wallets[3], position: 1), now: world.now) == .admitted)
        // A forged deposit is refused.
        var forger = try SoftwareWallet(seed: 99)
        try forger.fundFromNothing(GlueWorld.eur(1_000), issuer: world.issuerID)
        guard case .refused = try world.clearing.admit(try world.admission(forger, position: 1), now: world.now) else {
            Issue.record("a deposit from nothing admitted")
            return
        }
        #expect(try world.store.log(forger.walletID) == nil)
    }

    @Test("first and later syncs; a transfer matched exactly once whichever side syncs first; residue 0")
    func honest() throws {
        var world = try GlueWorld(wallets: 3)
        try world.fund(0, 10_000)
        try world.fund(1, 4_000)
        try world.syncIssuer()
        let first = try world.pay(3_000, from: 0, to: 1)
        let second = try world.pay(500, from: 1, to: 0)
        // Payer first for `first`, payee first for `second`.
        #expect(isAccepted(try world.sync(0)))
        #expect(try world.store.allMatches().isEmpty)
        guard case .accepted(_, let recorded) = try world.sync(1) else { Issue.record("wallet 1 refused"); return }
        // Wallet 0 synced after crediting `second`: wallet 1's sync matches both, each once.
        #expect(Set(recorded.matched.map(\.transferID)) == [first, second].map(\.payload.order.transferID).asSet)
        #expect(try world.store.allMatches().count == 2)

        // A later sync carries only the new entries and a consistency proof.
        let third = try world.pay(1_000, from: 0, to: 1)
        let base = try #require(try world.clearing.base(of: world.wallets[0].walletID))
        let upload = try world.upload(world.wallets[0])
        #expect(upload.close.claim.payload.fromSize == base && !upload.close.consistencyProof.isEmpty)
        #expect(upload.chunks.first?.keyEvents.isEmpty == true)
        guard case .accepted(_, let payerSide) = try world.run(upload, of: world.wallets[0].walletID) else {
            Issue.record("later sync refused")
            return
        }
        #expect(payerSide.matched.isEmpty)
        guard case .accepted(_, let payeeSide) = try world.sync(1) else { Issue.record("payee refused"); return }
        #expect(Set(payeeSide.matched.map(\.transferID)) == [third.payload.order.transferID])
        #expect(try world.store.allMatches().count == 3)
        #expect(try world.listings().isEmpty)
        try world.expectResidueZero()
    }

    @Test("two syncs from the same base: the second to close is not taken and keeps nothing")
    func superseded() throws {
        var world = try GlueWorld(wallets: 2)
        try world.fund(0, 10_000)
        try world.syncIssuer()
        try world.sync(0)
        try world.pay(1_000, from: 0, to: 1)
        let one = try world.upload(world.wallets[0])
        try world.pay(2_000, from: 0, to: 1)
        let two = try world.upload(world.wallets[0])
        #expect(isAccepted(try world.run(two, of: world.wallets[0].walletID)))
        let size = try world.clearing.base(of: world.wallets[0].walletID)
        // Run one after the other, the late one fails its position check before the transaction that would
        // say superseded (that answer needs the two to interleave); either way nothing of it is kept.
        let late = try world.run(one, of: world.wallets[0].walletID)
        #expect(!isAccepted(late) && late != .notAdmitted, "\(late)")
        #expect(try world.clearing.base(of: world.wallets[0].walletID) == size)
        #expect(try world.listed(world.wallets[0].walletID).isEmpty)
    }

    @Test("fraud (a): a wallet restored from an old copy pays two payees; listed, then proven when it syncs")
    func restoredCopy() throws {
        var world = try GlueWorld(wallets: 3)
        try world.fund(0, 10_000)
        try world.syncIssuer()
        try world.sync(0)
        var restored = world.wallets[0]
        // The original pays payee 1; the restored copy pads itself to the same size and pays payee 2.
        try world.pay(6_000, from: 0, to: 1)
        let budget = try Budget(
            category: "food", limit: GlueWorld.eur(5_000), window: .month, isHardCap: false, timeZoneIdentifier: "UTC")
        while restored.state.size + 1 < world.wallets[0].state.size {
            try restored.append(
                EntryDraft(
                    kind: .budgetChange, amount: nil, category: "food", statement: nil,
                    payload: BudgetChange.set(budget).payload))
        }
        let double = try restored.pay(world.wallets[2].walletID, amount: GlueWorld.eur(6_000))
        #expect(restored.state.size == world.wallets[0].state.size)
        world.sent[double.payload.order.transferID] = double
        try world.credit(double, payer: restored, by: 2)
        let payer = world.wallets[0].walletID

        #expect(isAccepted(try world.sync(1)))
        #expect(isAccepted(try world.sync(2)))
        #expect(try world.listed(payer).contains(.inconsistent))
        world.now += 3_600_001
        #expect(try world.listed(payer).contains(.unsynced))
        try world.expectProven(payer) // Two signed checkpoints of one size already prove the fork.

        let completion = try world.sync(0)
        if case .accepted = completion { Issue.record("the restored payer's original copy synced cleanly") }
        try world.expectProven(payer)
        #expect(try world.listed(world.wallets[1].walletID).isEmpty)
        #expect(try world.listed(world.wallets[2].walletID).isEmpty)
    }

    @Test("fraud (b): a checkpoint claiming a balance the entries do not reach gives type 7 evidence")
    func balanceFromNothing() throws {
        var world = try GlueWorld(wallets: 2)
        try world.fund(0, 10_000)
        try world.syncIssuer()
        try world.sync(0)
        try world.pay(1_000, from: 0, to: 1)
        let wallet = world.wallets[0]
        let asset = Asset(issuer: world.issuerID, currency: .eur)
        let honest = wallet.state
        let inflated = [
            AssetAmount(issuer: world.issuerID, money: GlueWorld.eur(honest.balances[asset]!.minorUnits + 50_000))
        ]
        let forged = try Checkpoint(
            walletID: wallet.walletID, walletKey: wallet.key, keySequence: wallet.log.current.sequence,
            keyEventPosition: wallet.log.current.ledgerPosition, size: honest.size, root: wallet.tree.root(),
            head: honest.head, time: wallet.time, snapshot: LedgerSnapshot(balances: inflated, windowTotals: []),
            index: LedgerIndex.digest(
                statements: wallet.entries.compactMap(LedgerIndex.statementRow(of:)), outgoing: [])
        ).sign(with: wallet.signer)
        let completion = try world.run(try world.upload(wallet, checkpoint: forged), of: wallet.walletID)
        guard case .evidence = completion else { Issue.record("not evidence: \(completion)"); return }
        let kinds = try world.store.allEvidence().map(\.evidence.kind.typeByte)
        #expect(kinds == [7])
        try world.expectProven(wallet.walletID)
    }
}

extension Array where Element: Hashable {
    var asSet: Set<Element> { Set(self) }
}
