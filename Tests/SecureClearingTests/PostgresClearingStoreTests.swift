import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureClearing
@testable import SecureCore

/// Real signed histories recorded into any clearing store: the scenarios of SecureCoreTests' `ClearingWorld`
/// (SoftwareWallets paid, credited, refused and reversed through the real statement checks, an issuer whose
/// mint and redemption entries are made beside them), over a store given at creation. With `mirror`, every
/// record call goes to an in-memory store as well, so the two stores' tables can be compared.
struct StoreWorld<Store: ClearingStore> {
    let issuerSigner: SoftwareSigner
    let issuerLog: KeyEventLog
    var wallets: [SoftwareWallet] = []
    var issuerEntries: [LedgerEntry] = []
    var outstanding: Int64 = 0
    var synced: [Int: Int] = [:]
    var sent: [Digest32: SignedTransfer] = [:]
    let store: Store
    let mirror: InMemoryClearingStore?
    var time: Int64 = SoftwareWallet.startTime
    var random: SeededRandom

    var issuer: WalletID { issuerLog.walletID }
    var book: ClearingBook<Store> { ClearingBook(issuer: issuer, store: store) }
    var policy: TransferPolicy { TransferPolicy(trustedIssuers: [issuer], acceptsWithoutProximity: true) }

    init(wallets count: Int, seed: UInt64 = 1, issuerSigner: SoftwareSigner, mirror: Bool = false, store: Store)
        throws
    {
        self.issuerSigner = issuerSigner
        issuerLog = try SoftwareWallet.issuerLog(of: issuerSigner)
        random = SeededRandom(seed: seed)
        self.store = store
        self.mirror = mirror ? InMemoryClearingStore() : nil
        for index in 0..<count { wallets.append(try SoftwareWallet(seed: seed &* 1000 &+ UInt64(index))) }
    }

    static func eur(_ cents: Int64) -> Money { try! Money(minorUnits: cents, currency: .eur) }

    func log(_ id: WalletID) -> KeyEventLog? {
        id == issuer ? issuerLog : wallets.first { $0.walletID == id }?.log
    }

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

    mutating func pay(_ cents: Int64, from payer: Int, to payee: Int?) throws -> SignedTransfer {
        let target = payee.map { wallets[$0].walletID } ?? issuer
        let transfer = try wallets[payer].pay(target, amount: Self.eur(cents))
        sent[transfer.payload.order.digest] = transfer
        return transfer
    }

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
            transfer, walletID: wallets[payee].walletID, payerLog: wallets[payerIndex(of: transfer)].log,
            state: wallets[payee].state, policy: policy)
        try #require(try wallets[payee].carryOut(verdict)?.kind == .paymentIn)
    }

    private func payerIndex(of transfer: SignedTransfer) -> Int {
        wallets.firstIndex { $0.walletID == transfer.payload.order.payerWalletID }!
    }

    mutating func refuse(_ transfer: SignedTransfer, by payee: Int) throws -> SignedRefusal {
        let refusal = try wallets[payee].refusal(of: transfer, reason: .debitMismatch)
        let payer = payerIndex(of: transfer)
        let verdict = RefusalCheck.evaluate(
            refusal, of: transfer, payeeLog: wallets[payee].log, state: wallets[payer].state)
        try #require(try wallets[payer].carryOut(verdict)?.kind == .reversal)
        return refusal
    }

    func pending(_ index: Int) -> [SyncedEntry] {
        wallets[index].entries[(synced[index] ?? 0)...].map { entry in
            SyncedEntry(
                position: entry.position, entry: entry,
                transfer: entry.kind == .paymentOut ? entry.statement.flatMap { sent[$0.payloadDigest] } : nil)
        }
    }

    /// Records `entries` of `wallet` in the store (and the mirror).
    func record(_ wallet: WalletID, _ entries: [SyncedEntry], checkpoint: SignedCheckpoint, now: Int64) throws
        -> RecordResult
    {
        if let mirror {
            _ = try ClearingBook(issuer: issuer, store: mirror).record(
                wallet: wallet, entries: entries, checkpoint: checkpoint, now: now, logs: log)
        }
        return try book.record(wallet: wallet, entries: entries, checkpoint: checkpoint, now: now, logs: log)
    }

    @discardableResult
    mutating func sync(_ index: Int?, now: Int64? = nil) throws -> RecordResult {
        let at = now ?? time
        guard let index else {
            let from = synced[wallets.count] ?? 0
            let entries = issuerEntries[from...].map { SyncedEntry(position: $0.position, entry: $0, transfer: nil) }
            synced[wallets.count] = issuerEntries.count
            return try record(issuer, entries, checkpoint: try issuerCheckpoint(), now: at)
        }
        let entries = pending(index)
        synced[index] = wallets[index].entries.count
        return try record(wallets[index].walletID, entries, checkpoint: try wallets[index].checkpoint(), now: at)
    }

    func issuerCheckpoint() throws -> SignedCheckpoint {
        let balances = outstanding > 0 ? [AssetAmount(issuer: issuer, money: Self.eur(outstanding))] : []
        return try Checkpoint(
            walletID: issuer, walletKey: issuerSigner.publicKey, keySequence: 0, keyEventPosition: 0,
            size: UInt64(issuerEntries.count + 1), root: ListHead.empty.digest, head: ListHead.empty.digest,
            time: time, snapshot: LedgerSnapshot(balances: balances, windowTotals: []), index: ListHead.empty.digest
        ).sign(with: issuerSigner)
    }

    func matches() throws -> Set<TransferKey> { try store.allMatches() }
}

/// The PostgreSQL store of the clearing against a real PostgreSQL 15: the in-memory store's scenarios, the
/// exact round trip of every record, the list's append race, a whole `Clearing` sync, and the two-sided race of
/// one transfer from two threads on separate connections.
@Suite("PostgreSQL clearing store")
struct PostgresClearingStoreTests {
    typealias World = StoreWorld<PostgresClearingStore>

    /// A migrated fresh database and a store over a pool of `poolSize`.
    static func store(issuer: WalletID, poolSize: Int = 4) throws -> (PostgresClearingStore, TestPostgres.Database) {
        let database = try TestPostgres.freshDatabase()
        try ClearingSchema.migrate(try PostgresConnection(database.connectionString))
        return (
            PostgresClearingStore(pool: PostgresPool(database.connectionString, size: poolSize), issuer: issuer),
            database
        )
    }

    static func world(wallets: Int, seed: UInt64 = 1, mirror: Bool = false, poolSize: Int = 4) throws -> World {
        let signer = try SoftwareSigner()
        let issuer = try SoftwareWallet.issuerLog(of: signer).walletID
        return try World(
            wallets: wallets, seed: seed, issuerSigner: signer, mirror: mirror,
            store: try store(issuer: issuer, poolSize: poolSize).0)
    }

    func key(_ transfer: SignedTransfer) -> TransferKey {
        TransferKey(payer: transfer.payload.order.payerWalletID, transferID: transfer.payload.order.transferID)
    }

    func credit(_ store: PostgresClearingStore, _ key: TransferKey) throws -> CreditRecord? {
        try store.transaction(locking: []) { try $0.credit(key) }
    }

    @Test("A debit and its credit match once, payer first or payee first; a re-sent sync is a duplicate")
    func matchesInBothOrders() throws {
        for payerFirst in [true, false] {
            var world = try Self.world(wallets: 2)
            try world.mint(10_000, to: 0)
            let transfer = try world.pay(2_500, from: 0, to: 1)
            try world.credit(transfer, by: 1)
            let first = try world.sync(payerFirst ? 0 : 1)
            #expect(first.matched.isEmpty, "payerFirst \(payerFirst)")
            let second = try world.sync(payerFirst ? 1 : 0)
            #expect(second.matched == [key(transfer)], "payerFirst \(payerFirst)")
            #expect(try world.matches() == [key(transfer)])
            world.synced[1] = 0
            let again = try world.sync(1)
            #expect(again.matched.isEmpty && again.outcomes.contains(.duplicate))
        }
    }

    @Test("A credit by a wallet the transfer does not name is refused")
    func creditByWrongPayee() throws {
        var world = try Self.world(wallets: 3)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(2_500, from: 0, to: 1)
        try world.credit(transfer, by: 1)
        try world.sync(0)
        let forged = try world.wallets[2].append(
            EntryDraft(
                kind: .paymentIn, amount: transfer.payload.order.amount, counterparty: world.wallets[0].walletID.bytes,
                statement: transfer.statementReference, payload: transfer.encoded))
        let result = try world.book.record(
            wallet: world.wallets[2].walletID,
            entries: [SyncedEntry(position: forged.position, entry: forged, transfer: nil)],
            checkpoint: try world.wallets[2].checkpoint(), now: world.time, logs: world.log)
        #expect(result.outcomes == [.refused(.wrongPayee)])
        #expect(try credit(world.store, key(transfer)) == nil && world.matches().isEmpty)
        try world.sync(1)
        #expect(try world.matches() == [key(transfer)])
    }

    @Test("A reused transfer id is refused and the payer listed inconsistent; the listing is published")
    func reusedTransferID() throws {
        var world = try Self.world(wallets: 3)
        try world.mint(10_000, to: 0)
        let first = try world.pay(1_000, from: 0, to: 1)
        try world.wallets[0].rotate()
        let order = try TransferOrder(
            transferID: first.payload.order.transferID, payerWalletID: world.wallets[0].walletID,
            payerKey: world.wallets[0].key, payeeWalletID: world.wallets[2].walletID,
            amount: first.payload.order.amount, proximity: .none, channelBinding: [])
        let second = try world.wallets[0].commit(order)
        world.sent[order.digest] = second
        let result = try world.sync(0)
        #expect(result.outcomes.last == .refused(.reusedTransferID))
        #expect(result.inconsistencies.map(\.kind) == [.reusedTransferID])
        #expect(try world.store.allInconsistencies() == result.inconsistencies)
        let published = try world.book.publishListings(now: world.time, unsyncedAfter: 1_000_000_000)
        #expect(published.contains { $0.wallet == world.wallets[0].walletID && $0.grounds == .inconsistent })
        #expect(try world.store.listHead().version == UInt64(published.count))
        #expect(try world.store.listIncrements(from: 1) == published)
        #expect(try world.book.publishListings(now: world.time, unsyncedAfter: 1_000_000_000).isEmpty)

        try world.credit(first, by: 1)
        try world.credit(second, by: 2)
        #expect(try world.sync(1).matched == [key(first)])
        #expect(try world.sync(2).outcomes.last == .refused(.reusedTransferID))
    }

    @Test("A reversal is recorded with the payee's verified refusal, refused without one or without the debit")
    func reversals() throws {
        var world = try Self.world(wallets: 3)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(2_500, from: 0, to: 1)
        let bogus = try world.wallets[2].refusal(of: transfer, reason: .debitMismatch)
        try world.wallets[0].append(
            EntryDraft(
                kind: .reversal, amount: transfer.payload.order.amount, counterparty: world.wallets[1].walletID.bytes,
                statement: bogus.statementReference, payload: bogus.encoded))
        #expect(try world.sync(0).outcomes.last == .refused(.refusalInvalid))
        #expect(try world.store.allReversals().isEmpty)

        var honest = try Self.world(wallets: 2, seed: 2)
        try honest.mint(10_000, to: 0)
        let paid = try honest.pay(2_500, from: 0, to: 1)
        _ = try honest.refuse(paid, by: 1)
        let withoutDebit = honest.pending(0).filter { $0.entry.kind != .paymentOut }
        let blind = try honest.book.record(
            wallet: honest.wallets[0].walletID, entries: withoutDebit, checkpoint: try honest.wallets[0].checkpoint(),
            now: honest.time, logs: honest.log)
        #expect(blind.outcomes.last == .refused(.reversalWithoutDebit))
        let seen = try honest.sync(0)
        #expect(seen.outcomes.last == .recorded)
        let stored = try #require(try honest.store.allReversals().first)
        #expect(stored.key == key(paid) && stored.payee == honest.wallets[1].walletID)
        #expect(try honest.store.transaction(locking: []) { try $0.reversal(key(paid)) } == stored)
    }

    @Test("A seeded history: the residue is zero after every sync, and every table equals the in-memory store's")
    func conservationAndRoundTrip() throws {
        var world = try Self.world(wallets: 4, seed: 7, mirror: true)
        var random = SeededRandom(seed: 7)
        var inFlight: [(SignedTransfer, Int?)] = []
        let euro = Asset(issuer: world.issuer, currency: .eur)
        for step in 0..<40 {
            let pick = Int(random.next() % 10)
            let wallet = Int(random.next() % 4)
            switch pick {
            case 0, 1: try world.mint(Int64(1_000 + random.next() % 5_000), to: wallet)
            case 2, 3, 4:
                let balance = world.wallets[wallet].state.balance(euro).minorUnits
                guard balance > 0 else { continue }
                let payee = Int(random.next() % 5)
                let target: Int? = payee == 4 ? nil : (payee == wallet ? (payee + 1) % 4 : payee)
                inFlight.append(
                    (try world.pay(1 + Int64(random.next() % UInt64(balance)), from: wallet, to: target), target))
            case 5, 6:
                guard !inFlight.isEmpty else { continue }
                let (transfer, payee) = inFlight.remove(at: Int(random.next() % UInt64(inFlight.count)))
                if let payee, random.next() % 4 == 0 {
                    _ = try world.refuse(transfer, by: payee)
                } else {
                    try world.credit(transfer, by: payee)
                }
            default:
                try world.sync(wallet == 3 && pick == 9 ? nil : wallet)
                world.time += 1000
                for report in try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000) {
                    #expect(report.residue == 0, "step \(step): \(report)")
                }
            }
        }
        for index in 0..<4 { try world.sync(index) }
        try world.sync(nil)
        let reports = try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000)
        #expect(!reports.isEmpty && reports.allSatisfy { $0.residue == 0 && $0.walletsWithResidue.isEmpty })
        let mirror = try #require(world.mirror)
        #expect(
            try ClearingBook(issuer: world.issuer, store: mirror).conservation(
                now: world.time, unsyncedAfter: 3_600_000) == reports)
        let store = world.store
        #expect(try store.allDebits() == mirror.allDebits() && !mirror.allDebits().isEmpty)
        #expect(try store.allCredits() == mirror.allCredits())
        #expect(try store.allReversals() == mirror.allReversals())
        #expect(try store.allMatches() == mirror.allMatches())
        #expect(try store.allMints() == mirror.allMints() && store.allDeposits() == mirror.allDeposits())
        #expect(try store.allWallets() == mirror.allWallets())
        #expect(try store.allEvidence() == mirror.allEvidence())
        #expect(try store.allInconsistencies() == mirror.allInconsistencies())
        for row in mirror.allWallets() {
            for size in [row.cosigned.checkpoint.size, row.cosigned.checkpoint.size - 1] {
                #expect(
                    try store.transaction(locking: [row.walletID]) {
                        try $0.heldCheckpoints(wallet: row.walletID, size: size)
                    }
                        == mirror.heldCheckpoints(wallet: row.walletID, size: size))
            }
        }
    }

    @Test("Two stores append the same list version at once: exactly one wins, every round")
    func listAppendRace() throws {
        let issuer = Self.id(0x11)
        let (first, database) = try Self.store(issuer: issuer)
        let second = PostgresClearingStore(pool: PostgresPool(database.connectionString, size: 1), issuer: issuer)
        var head = ListHead.empty
        for round in 0..<20 {
            let increments = [first, second].indices.map { side in
                ListIncrement.add(
                    wallet: Self.id(UInt8(2 * round + side + 1)), grounds: .inconsistent,
                    evidence: Digest32(of: [UInt8(round), UInt8(side)]))
            }
            let stores = [first, second]
            let results = Results<Bool>(count: 2)
            let expected = head
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                results.set(side, Result { try stores[side].appendListIncrement(increments[side], expected: expected) })
            }
            let won = try results.values().map { try $0.get() }
            #expect(won.filter { $0 }.count == 1, "round \(round): \(won)")
            let winner = increments[won.firstIndex(of: true) ?? 0]
            head = head.appending(winner)
            #expect(try first.listHead() == head && second.listHead() == head)
        }
        #expect(try first.listIncrements(from: 1).count == 20 && first.listings().count == 20)
        #expect(
            try !second.appendListIncrement(
                .remove(wallet: Self.id(0x7f), grounds: .inconsistent, settlement: head.digest), expected: .empty))
    }

    /// A wallet id of one repeated byte.
    static func id(_ byte: UInt8) -> WalletID { WalletID(bytes: [UInt8](repeating: byte, count: 32))! }

    /// A value handed to concurrent workers that only read it (the book and the store are thread-safe).
    final class Unchecked<Value>: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// Results written by concurrent workers.
    final class Results<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [Result<Value, Error>?]
        init(count: Int) { stored = Array(repeating: nil, count: count) }
        func set(_ index: Int, _ value: Result<Value, Error>) { lock.withLock { stored[index] = value } }
        func values() -> [Result<Value, Error>] { lock.withLock { stored.map { $0! } } }
    }

    @Test("The payer's and the payee's record calls of one transfer from two threads: exactly one match, every round")
    func twoSidedRace() throws {
        let rounds = ProcessInfo.processInfo.environment["SECURE_CLEARING_RACE_ROUNDS"].flatMap(Int.init) ?? 100
        var world = try Self.world(wallets: 2, poolSize: 2)
        try world.mint(1_000_000, to: 0)
        try world.sync(0)
        try world.sync(1)
        let payer = world.wallets[0].walletID, payee = world.wallets[1].walletID
        for round in 0..<rounds {
            let transfer = try world.pay(1, from: 0, to: 1)
            try world.credit(transfer, by: 1)
            let calls = [
                (payer, world.pending(0), try world.wallets[0].checkpoint()),
                (payee, world.pending(1), try world.wallets[1].checkpoint()),
            ]
            world.synced[0] = world.wallets[0].entries.count
            world.synced[1] = world.wallets[1].entries.count
            let shared = Unchecked((world.book, world.log)), now = world.time
            let results = Results<RecordResult>(count: 2)
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                let (wallet, entries, checkpoint) = calls[side]
                let (book, log) = shared.value
                results.set(
                    side,
                    Result {
                        try book.record(wallet: wallet, entries: entries, checkpoint: checkpoint, now: now, logs: log)
                    })
            }
            let recorded = try results.values().map { try $0.get() }
            let matched = recorded.flatMap(\.matched)
            #expect(matched == [key(transfer)], "round \(round)")
            #expect(recorded.allSatisfy { !$0.outcomes.contains { if case .refused = $0 { true } else { false } } })
            let rows = try world.store.pool.withConnection { connection in
                try connection.query(
                    "SELECT count(*)::int8 AS n FROM matches WHERE payer = $1 AND transfer_id = $2",
                    [.bytea(payer.bytes), .bytea(transfer.payload.order.transferID.bytes)])
            }
            #expect(try rows.rows[0].int64("n") == 1, "round \(round)")
            if matched.count != 1 { break }
        }
        #expect(try world.matches().count == rounds)
        #expect(try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000).allSatisfy { $0.residue == 0 })
    }

    /// Alice's (or Bob's) upload of entries `from` on, with the counterparties' logs, and its close request.
    static func upload(
        _ wallet: SoftwareWallet, from: UInt64, issuer: WalletID, peers: [WalletID: KeyEventLog],
        sent: [Digest32: SignedTransfer]
    ) throws -> ([SyncChunk], SyncClose) {
        let byID = Dictionary(sent.values.map { ($0.payload.order.transferID, $0) }) { first, _ in first }
        let all = try SyncEntry.make(wallet.entries, issuer: issuer, sentTransfer: { byID[$0] })
        let session = SyncSessionID.random()
        let chunks = SyncChunk.chunks(
            walletID: wallet.walletID, session: session, entries: Array(all.entries.dropFirst(Int(from))),
            keyEvents: from == 0 ? wallet.log.events : [], peerLogs: peers, entryCountMax: 2)
        let map = OpaqueMap(items: all.map.items.filter { $0.position >= from })
        let checkpoint = try wallet.checkpoint()
        let claim = try SyncClaim(
            walletID: wallet.walletID, walletKey: wallet.key, keyDate: KeyDate(checkpoint: checkpoint.checkpoint),
            issuer: issuer, fromSize: from, toSize: checkpoint.checkpoint.size, opaqueMapDigest: map.digest,
            session: session
        ).sign(with: wallet.signer)
        let proof = from == 0 ? [] : wallet.tree.consistencyProof(oldSize: from)
        return (chunks, SyncClose(claim: claim, checkpoint: checkpoint, consistencyProof: proof, opaqueMap: map))
    }

    @Test("A whole Clearing sync over PostgreSQL: admission, the payer's and the payee's syncs, a match, resumption")
    func clearingSync() throws {
        var world = try Self.world(wallets: 2)
        try world.mint(10_000, to: 0)
        try world.sync(nil)
        let clearing = Clearing(issuerLog: world.issuerLog, store: world.store)
        let alice = world.wallets[0], aliceID = alice.walletID, bobID = world.wallets[1].walletID
        // Before admission nothing syncs.
        let early = try Self.upload(alice, from: 0, issuer: world.issuer, peers: [:], sent: world.sent)
        #expect(try clearing.sync(wallet: aliceID, chunks: early.0, close: early.1, now: world.time) == .notAdmitted)
        #expect(try clearing.base(of: aliceID) == nil)

        let deposit = try #require(alice.entries.first { $0.kind == .deposit })
        let admission = AdmissionRequest(
            log: alice.log, checkpoint: try alice.checkpoint(), entry: deposit,
            proof: alice.tree.inclusionProof(index: deposit.position))
        #expect(try clearing.admit(admission, now: world.time) == .admitted)
        #expect(try clearing.base(of: aliceID) == 0)

        let transfer = try world.pay(2_500, from: 0, to: 1)
        try world.credit(transfer, by: 1)
        let bob = world.wallets[1]
        let credit = try #require(bob.entries.first { $0.kind == .paymentIn })
        let bobAdmission = AdmissionRequest(
            log: bob.log, checkpoint: try bob.checkpoint(), entry: credit,
            proof: bob.tree.inclusionProof(index: credit.position))
        #expect(try clearing.admit(bobAdmission, now: world.time) == .admitted)

        let aliceUpload = try Self.upload(
            world.wallets[0], from: 0, issuer: world.issuer, peers: [bobID: bob.log], sent: world.sent)
        let aliceDone = try clearing.sync(wallet: aliceID, chunks: aliceUpload.0, close: aliceUpload.1, now: world.time)
        guard case .accepted(_, let aliceRecorded) = aliceDone else {
            Issue.record("Alice's sync: \(aliceDone)")
            return
        }
        #expect(aliceRecorded.matched.isEmpty)
        #expect(!aliceRecorded.outcomes.contains { if case .refused = $0 { true } else { false } })
        // The same close again starts from the old base: another sync of the wallet got there first.
        #expect(
            try clearing.sync(wallet: aliceID, chunks: aliceUpload.0, close: aliceUpload.1, now: world.time)
                != aliceDone)

        let bobUpload = try Self.upload(
            bob, from: 0, issuer: world.issuer, peers: [aliceID: world.wallets[0].log], sent: world.sent)
        let bobDone = try clearing.sync(wallet: bobID, chunks: bobUpload.0, close: bobUpload.1, now: world.time)
        guard case .accepted(let leaf, let bobRecorded) = bobDone else {
            Issue.record("Bob's sync: \(bobDone)")
            return
        }
        #expect(bobRecorded.matched == [key(transfer)])
        #expect(leaf.wallet == bobID && leaf.size == bob.entries.count.uint64)

        // What the store kept resumes the next sync: state, history, logs.
        let size = UInt64(world.wallets[0].entries.count)
        #expect(try clearing.base(of: aliceID) == size)
        let history = try world.store.transaction(locking: []) { try $0.history(aliceID) }
        #expect(history.entries.count == Int(size) && history.claims.count == 1 && history.sentTransfers == [transfer])
        #expect(try world.store.transaction(locking: []) { try $0.log(bobID) } == bob.log)
        let second = try world.pay(500, from: 0, to: 1)
        let next = try Self.upload(
            world.wallets[0], from: size, issuer: world.issuer, peers: [bobID: bob.log], sent: world.sent)
        guard case .accepted = try clearing.sync(wallet: aliceID, chunks: next.0, close: next.1, now: world.time + 1)
        else {
            Issue.record("Alice's second sync was not accepted")
            return
        }
        #expect(try world.store.transaction(locking: []) { try $0.debit(key(second)) } != nil)
        #expect(try world.store.transaction(locking: []) { try $0.history(aliceID) }.claims.count == 2)
    }

    @Test("Chunks, batches, cosignatures, evidence look-up and quotas for the HTTP endpoints")
    func endpointTables() throws {
        let (store, _) = try Self.store(issuer: Self.id(0x11))
        let wallet = Self.id(0x21)
        let session: [UInt8] = Array(repeating: 7, count: 16)
        // Chunks expire by the database's clock (Unix ms): an hour from now.
        let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
        #expect(
            try store.putChunk(wallet: wallet, session: session, firstPosition: 2, encoded: [2], expiresAt: later)
                == .inserted)
        #expect(
            try store.putChunk(wallet: wallet, session: session, firstPosition: 0, encoded: [0], expiresAt: later)
                == .inserted)
        #expect(
            try store.putChunk(wallet: wallet, session: session, firstPosition: 0, encoded: [0], expiresAt: later)
                == .existedEqual)
        #expect(
            try store.putChunk(wallet: wallet, session: session, firstPosition: 0, encoded: [9], expiresAt: later)
                == .existedDifferent)
        #expect(try store.chunks(wallet: wallet, session: session) == [[0], [2]])
        #expect(try store.chunks(wallet: wallet, session: [1]).isEmpty)
        try store.deleteChunks(wallet: wallet, session: session)
        #expect(try store.chunks(wallet: wallet, session: session).isEmpty)
        _ = try store.putChunk(wallet: wallet, session: [1], firstPosition: 0, encoded: [1], expiresAt: 5)
        // Expired by the database's clock: not handed out, and swept.
        #expect(try store.chunks(wallet: wallet, session: [1]).isEmpty)
        #expect(try store.deleteExpiredChunks(now: 6) == 1)

        let first = try store.nextBatchNumber(), second = try store.nextBatchNumber()
        #expect(first >= 1 && second == first + 1)

        #expect(try store.countRequest(subject: "a", windowStart: 60_000, bytes: 10) == (1, 10))
        #expect(try store.countRequest(subject: "a", windowStart: 60_000, bytes: 5) == (2, 15))
        #expect(try store.countRequest(subject: "a", windowStart: 120_000, bytes: 1) == (1, 1))
        #expect(try store.latestCosignature(wallet: wallet) == nil)
        #expect(try store.evidence(digest: EvidenceDigest(of: [1])) == nil)
    }
}

extension Int {
    fileprivate var uint64: UInt64 { UInt64(self) }
}
