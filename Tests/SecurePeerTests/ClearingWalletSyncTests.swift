import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore
@testable import SecureWallet

/// An issuer's clearing in memory, run the way the service runs it: a sync's chunks and close go to
/// `Clearing.sync`, each accepted sync is cosigned alone in its own batch, and the answer carries the list
/// increments the wallet lacks, published just before.
private final class MemoryClearing {
    let clearing: Clearing<InMemoryClearingStore>
    let signer: SoftwareSigner
    let delegationSequence: UInt64
    private(set) var published: [ListIncrement] = []
    private var batch: UInt64 = 0
    var now: Int64 = 1_767_225_600_000

    init(issuerLog: KeyEventLog, signer: SoftwareSigner) throws {
        clearing = Clearing(issuerLog: issuerLog, store: InMemoryClearingStore())
        self.signer = signer
        delegationSequence = try #require(issuerLog.events.last { $0.event.clearing != nil }).event.sequence
    }

    /// One whole sync of `wallet`: admission when the clearing does not know it, the upload from its base,
    /// and, when accepted, the answer applied by the wallet.
    func sync(_ wallet: Wallet) throws -> (
        upload: WalletSyncUpload, completion: SyncCompletion, result: ClearingSyncResult?
    ) {
        now += 1000
        let issuer = try wallet.clearingIssuer(nil)
        if try clearing.base(of: wallet.walletID) == nil {
            let outcome = try clearing.admit(try wallet.admissionRequest(issuer: issuer), now: now)
            #expect(outcome == .admitted, "admission: \(outcome)")
        }
        let base = try #require(try clearing.base(of: wallet.walletID))
        let upload = try wallet.syncUpload(issuer: issuer, base: base, chunkEntryCountMax: 2)
        let completion = try clearing.sync(
            wallet: wallet.walletID, chunks: upload.chunks, close: upload.close, now: now)
        guard case .accepted(let leaf, _) = completion else { return (upload, completion, nil) }
        published += try clearing.book.publishListings(
            now: now, unsyncedAfter: ClearingLimits.unsyncedAfterMillisecondsDefault)
        let head = published.reduce(ListHead.empty) { $0.appending($1) }
        var cosigning = CosignatureBatch()
        let added = cosigning.add(leaf, now: now)
        #expect(added)
        batch += 1
        let cosignature = try #require(
            try cosigning.close(
                issuer: clearing.issuer, delegationSequence: delegationSequence, batch: batch, time: now,
                list: head, signer: signer)?.first)
        let held = try wallet.clearingList(issuer: issuer).head.version
        let answer = SyncAnswer(
            cosignature: cosignature, increments: Array(published.dropFirst(Int(held))), fromVersion: held + 1)
        return (upload, completion, try wallet.applySyncAnswer(answer, for: upload))
    }
}

@Suite("Wallets sync with their issuer's clearing", .serialized)
struct ClearingWalletSyncTests {
    static func euros(_ text: String) throws -> Money { try MoneyText.parse(text + " EUR") }

    @Test func walletsSyncMatchAndRefuseAWalletProvenToHaveForked() throws {
        let issuer = try TestWallet("clr-iss", isIssuer: true)
        let clearingSigner = try SoftwareSigner()
        _ = try issuer.wallet!.delegateClearing(
            try ClearingDelegation(
                clearingKey: clearingSigner.publicKey, clearingKeyOrigin: .modulesWord,
                tlsKeyDigest: Digest32(of: [1]), url: "https://clearing.example"),
            clearingSigner: clearingSigner)
        let card = WalletCard(log: issuer.wallet!.keyLog)
        let clearing = try MemoryClearing(issuerLog: issuer.wallet!.keyLog, signer: clearingSigner)
        let alice = try TestWallet("clr-a"), bob = try TestWallet("clr-b"), carol = try TestWallet("clr-c")
        let dave = try TestWallet("clr-d")
        for test in [alice, bob, carol, dave] { try test.wallet!.trust(issuer: card) }
        let lenient = TransferPolicy(acceptsWithoutProximity: true)

        // A wallet that never deposited nor was paid is not admitted: it says so before anything is sent.
        #expect(throws: WalletError.self) { try bob.wallet!.admissionRequest(issuer: card.walletID) }

        // The issuer mints and syncs first (its inception admits it); Alice deposits and is admitted by the mint.
        let voucher = try issuer.wallet!.mint(to: WalletCard(log: alice.wallet!.keyLog), amount: Self.euros("30.00"))
        #expect(try clearing.sync(issuer.wallet!).result != nil)
        guard case .recorded = try alice.wallet!.deposit(voucher) else { Issue.record("deposit"); return }
        let first = try clearing.sync(alice.wallet!)
        #expect(first.upload.base == 0 && first.upload.chunks.count > 1, "a first sync sends everything, chunked")
        #expect(first.result?.cosignedSize == alice.wallet!.size)

        // Alice pays Bob; both sync. Alice's second sync sends only her new entries, with a consistency proof
        // from the cosigned checkpoint; Bob is admitted by the payment in; the second upload writes the match.
        let transfer = try alice.wallet!.spend(
            to: WalletCard(log: bob.wallet!.keyLog), amount: try alice.wallet!.asset("10.00 EUR"), category: "x")
        guard case .recorded = try bob.wallet!.accept(transfer, policy: lenient).1 else {
            Issue.record("credit"); return
        }
        let second = try clearing.sync(alice.wallet!)
        let old = first.upload.close.checkpoint.checkpoint, new = second.upload.close.checkpoint.checkpoint
        #expect(
            second.upload.base == old.size
                && second.upload.wholeCount + second.upload.opaqueCount == Int(new.size - old.size))
        #expect(
            Merkle.verifyConsistency(
                oldSize: old.size, newSize: new.size, oldRoot: old.root, newRoot: new.root,
                proof: second.upload.close.consistencyProof))
        #expect(second.result?.cosignedSize == new.size)
        let bobSync = try clearing.sync(bob.wallet!)
        guard case .accepted(_, let recorded) = bobSync.completion else {
            Issue.record("Bob's sync: \(bobSync.completion)"); return
        }
        #expect(recorded.matched.count == 1, "Alice's debit and Bob's credit match")

        // Alice keeps a copy, pays Bob again, and Bob syncs (the clearing holds her checkpoint from his credit).
        let anchor = TokenAnchor(session: alice.wallet!.token, walletID: alice.wallet!.walletID)
        let savedAnchor = try #require(try anchor.load())
        alice.close()
        let copy = TestTokens.layout.directory + "/clr-copy-\(UUID().uuidString)"
        try alice.copyFiles(to: copy)
        try alice.reopen()
        let again = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("5.00 EUR"), category: "x")
        guard case .recorded = try bob.wallet!.accept(again, payerLog: alice.wallet!.keyLog, policy: lenient)
        else { Issue.record("second credit"); return }
        #expect(try clearing.sync(bob.wallet!).result != nil)

        // The old copy, restored, pays Carol instead; its sync is caught with evidence.
        alice.close()
        try alice.restoreFiles(from: copy, only: ["ledger.db", "ledger.db-wal", "ledger.db-shm"])
        try alice.reopen()
        try TokenAnchor(session: alice.wallet!.token, walletID: alice.wallet!.walletID).store(savedAnchor)
        try alice.reopen()
        _ = try alice.wallet!.spend(
            to: WalletCard(log: carol.wallet!.keyLog), amount: try alice.wallet!.asset("5.00 EUR"), category: "x")
        let caught = try clearing.sync(alice.wallet!)
        guard case .evidence(let digest) = caught.completion else {
            Issue.record("the restored copy's sync was not caught: \(caught.completion)"); return
        }

        // Dave is admitted by a voucher, syncs, and takes the proven listing from the answer: he is not paid by
        // Alice, and does not pay her, each time naming the evidence.
        let daveVoucher = try issuer.wallet!.mint(to: WalletCard(log: dave.wallet!.keyLog), amount: Self.euros("9.00"))
        #expect(try clearing.sync(issuer.wallet!).result != nil)
        guard case .recorded = try dave.wallet!.deposit(daveVoucher) else { Issue.record("Dave's deposit"); return }
        let daveSync = try #require(clearing.sync(dave.wallet!).result)
        #expect(daveSync.listRefusal == nil && daveSync.listVersion >= 1)
        let listing = try #require(try dave.wallet!.provenListing(of: alice.wallet!.walletID))
        #expect(listing.digest.bytes == digest.bytes, "the listing names the evidence the clearing kept")
        let fromAlice = try alice.wallet!.spend(
            to: WalletCard(log: dave.wallet!.keyLog), amount: try alice.wallet!.asset("1.00 EUR"), category: "x")
        let refused = try dave.wallet!.accept(fromAlice, policy: lenient).1
        guard case .policyRefusal(.payerBanned(let named)) = refused else {
            Issue.record("a payer listed proven was not refused: \(refused)"); return
        }
        #expect(named == digest)
        do {
            _ = try dave.wallet!.spend(
                to: alice.wallet!.walletID, amount: try dave.wallet!.asset("1.00 EUR"), category: "x")
            Issue.record("Dave paid a wallet listed proven")
        } catch let error as WalletError {
            #expect(error.code == .refused && error.message.contains(digest.hex), "\(error.message)")
        }

        // The kept list checks again on reading, against the signed head kept with it.
        #expect(try dave.wallet!.clearingList(issuer: card.walletID).head.version == daveSync.listVersion)
        for test in [issuer, alice, bob, dave] {
            let report = try test.wallet!.verifyLedger()
            #expect(report.isValid, "\(report.problems)")
        }
    }
}
