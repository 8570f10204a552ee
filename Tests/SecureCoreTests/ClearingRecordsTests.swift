import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The clearing's cross-wallet rules (docs/CLEARING.md §2.4): matching in either order and under every
/// interleaving, credits by the named payee only, reversals only with a verified refusal, reused transfer ids,
/// credit and refusal of one transfer, redemptions, and type 1 evidence from held payer checkpoints.
@Suite("Clearing records and matching")
struct ClearingRecordsTests {
    /// Wallet 0, funded, pays wallet 1.
    func payment() throws -> (ClearingWorld, SignedTransfer) {
        var world = try ClearingWorld(wallets: 3)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(2_500, from: 0, to: 1)
        try world.credit(transfer, by: 1)
        return (world, transfer)
    }

    func key(_ transfer: SignedTransfer) -> TransferKey {
        TransferKey(payer: transfer.payload.order.payerWalletID, transferID: transfer.payload.order.transferID)
    }

    @Test("A debit and its credit match once, payer first or payee first")
    func matchesInBothOrders() throws {
        for payerFirst in [true, false] {
            var (world, transfer) = try payment()
            let first = try world.sync(payerFirst ? 0 : 1)
            #expect(first.matched.isEmpty, "payerFirst \(payerFirst)")
            let second = try world.sync(payerFirst ? 1 : 0)
            #expect(second.matched == [key(transfer)], "payerFirst \(payerFirst)")
            #expect(world.matches() == [key(transfer)])
            #expect(!first.outcomes.contains { if case .refused = $0 { true } else { false } })
            // A re-sent sync is a duplicate and matches nothing again.
            world.synced[1] = 0
            let again = try world.sync(1)
            #expect(again.matched.isEmpty && again.outcomes.contains(.duplicate))
        }
    }

    @Test("Every interleaving of the payer's and the payee's record calls gives exactly one match")
    func twoSidedRaceByInterleaving() throws {
        // The payer's calls: deposit, then the debit; the payee's: the credit, then the same credit re-sent.
        for order in interleavings(payer: 2, payee: 2) {
            var (world, transfer) = try payment()
            let payerEntries = world.pending(0)
            let payeeEntries = world.pending(1)
            let payerCalls = [Array(payerEntries.prefix(2)), Array(payerEntries.dropFirst(2))]
            let payeeCalls = [payeeEntries, payeeEntries]
            var payerNext = 0, payeeNext = 0, matched: [TransferKey] = []
            for isPayer in order {
                let index = isPayer ? 0 : 1
                let entries = isPayer ? payerCalls[payerNext] : payeeCalls[payeeNext]
                if isPayer { payerNext += 1 } else { payeeNext += 1 }
                let result = try world.book.record(
                    wallet: world.wallets[index].walletID, entries: entries,
                    checkpoint: try world.wallets[index].checkpoint(), now: world.time, logs: world.log)
                matched += result.matched
            }
            #expect(matched == [key(transfer)], "order \(order)")
            #expect(world.matches() == [key(transfer)], "order \(order)")
        }
    }

    /// Every order of `payer` calls and `payee` calls that keeps each side's own order (true: a payer call).
    func interleavings(payer: Int, payee: Int) -> [[Bool]] {
        if payer == 0 { return [Array(repeating: false, count: payee)] }
        if payee == 0 { return [Array(repeating: true, count: payer)] }
        return interleavings(payer: payer - 1, payee: payee).map { [true] + $0 }
            + interleavings(payer: payer, payee: payee - 1).map { [false] + $0 }
    }

    @Test("A credit by a wallet the transfer does not name is refused")
    func creditByWrongPayee() throws {
        var (world, transfer) = try payment()
        try world.sync(0)
        // Wallet 2 records wallet 1's transfer as its own payment in (its own ledger accepts the forgery).
        let forged = try world.wallets[2].append(
            EntryDraft(
                kind: .paymentIn, amount: transfer.payload.order.amount, counterparty: world.wallets[0].walletID.bytes,
                statement: transfer.statementReference, payload: transfer.encoded))
        let result = try world.book.record(
            wallet: world.wallets[2].walletID,
            entries: [SyncedEntry(position: forged.position, entry: forged, transfer: nil)],
            checkpoint: try world.wallets[2].checkpoint(), now: world.time, logs: world.log)
        #expect(result.outcomes == [.refused(.wrongPayee)])
        #expect(world.store.credit(key(transfer)) == nil && world.matches().isEmpty)
        try world.sync(1)
        #expect(world.matches() == [key(transfer)])
    }

    @Test("A reversal is recorded only with the payee's verified refusal")
    func reversalNeedsVerifiedRefusal() throws {
        var world = try ClearingWorld(wallets: 3)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(2_500, from: 0, to: 1)
        // Wallet 2 signs a refusal of a transfer to wallet 1: the payer's own ledger takes the reversal.
        let bogus = try world.wallets[2].refusal(of: transfer, reason: .debitMismatch)
        try world.wallets[0].append(
            EntryDraft(
                kind: .reversal, amount: transfer.payload.order.amount, counterparty: world.wallets[1].walletID.bytes,
                statement: bogus.statementReference, payload: bogus.encoded))
        let result = try world.sync(0)
        #expect(result.outcomes.last == .refused(.refusalInvalid))
        #expect(world.store.reversal(key(transfer)) == nil)

        // The real payee's refusal: refused without its log, recorded with it.
        var honest = try ClearingWorld(wallets: 2)
        try honest.mint(10_000, to: 0)
        let paid = try honest.pay(2_500, from: 0, to: 1)
        _ = try honest.refuse(paid, by: 1)
        let entries = honest.pending(0)
        let blind = try honest.book.record(
            wallet: honest.wallets[0].walletID, entries: entries, checkpoint: try honest.wallets[0].checkpoint(),
            now: honest.time, logs: { _ in nil })
        #expect(blind.outcomes.last == .refused(.payeeLogMissing))
        let seen = try honest.sync(0)
        #expect(seen.outcomes.last == .recorded)
        #expect(honest.store.reversal(key(paid)) != nil)
    }

    @Test("A reversal of a debit the clearing never saw is refused")
    func reversalWithoutDebit() throws {
        var world = try ClearingWorld(wallets: 2)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(2_500, from: 0, to: 1)
        _ = try world.refuse(transfer, by: 1)
        let entries = world.pending(0).filter { $0.entry.kind != .paymentOut }
        let result = try world.book.record(
            wallet: world.wallets[0].walletID, entries: entries, checkpoint: try world.wallets[0].checkpoint(),
            now: world.time, logs: world.log)
        #expect(result.outcomes.last == .refused(.reversalWithoutDebit))
    }

    @Test("A transfer id reused by the payer is refused and the payer listed inconsistent")
    func reusedTransferID() throws {
        var world = try ClearingWorld(wallets: 3)
        try world.mint(10_000, to: 0)
        let first = try world.pay(1_000, from: 0, to: 1)
        try world.wallets[0].rotate()
        // After a rotation, the ledger keys statements by the new key: the same id is a new statement there.
        let order = try TransferOrder(
            transferID: first.payload.order.transferID, payerWalletID: world.wallets[0].walletID,
            payerKey: world.wallets[0].key, payeeWalletID: world.wallets[2].walletID,
            amount: first.payload.order.amount, proximity: .none, channelBinding: [])
        let second = try world.wallets[0].commit(order)
        world.sent[order.digest] = second
        let result = try world.sync(0)
        #expect(result.outcomes.last == .refused(.reusedTransferID))
        #expect(result.inconsistencies.map(\.kind) == [.reusedTransferID])
        let listings = try world.book.listings(now: world.time, unsyncedAfter: 1000)
        #expect(listings.contains { $0.wallet == world.wallets[0].walletID && $0.grounds == .inconsistent })

        // Two payees crediting the two transfers: the second credit is refused too.
        try world.credit(first, by: 1)
        try world.credit(second, by: 2)
        #expect(try world.sync(1).matched == [key(first)])
        let late = try world.sync(2)
        #expect(late.outcomes.last == .refused(.reusedTransferID))
    }

    @Test("A payee that credits a transfer and refuses it is listed inconsistent, in either order")
    func creditedAndRefused() throws {
        for payeeFirst in [true, false] {
            var world = try ClearingWorld(wallets: 2)
            try world.mint(10_000, to: 0)
            let transfer = try world.pay(2_500, from: 0, to: 1)
            try world.credit(transfer, by: 1)
            _ = try world.refuse(transfer, by: 1)
            let first = try world.sync(payeeFirst ? 1 : 0)
            let second = try world.sync(payeeFirst ? 0 : 1)
            let found = first.inconsistencies + second.inconsistencies
            #expect(found.map(\.kind) == [.creditedAndRefused], "payeeFirst \(payeeFirst)")
            #expect(found.first?.wallet == world.wallets[1].walletID)
            let listings = try world.book.listings(now: world.time, unsyncedAfter: 1000)
            #expect(listings.map(\.grounds) == [.inconsistent] && listings.first?.wallet == world.wallets[1].walletID)
        }
    }

    @Test("A payment to the issuer is credited by its redemption, and both sides match")
    func redemption() throws {
        var world = try ClearingWorld(wallets: 1)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(3_000, from: 0, to: nil)
        try world.credit(transfer, by: nil)
        try world.sync(nil)
        let result = try world.sync(0)
        #expect(result.matched == [key(transfer)])
        #expect(world.store.credit(key(transfer))?.isRedemption == true)
    }

    @Test("Two payees holding different payer checkpoints of one size give type 1 evidence")
    func forkFromHeldCheckpoints() throws {
        var world = try ClearingWorld(wallets: 3)
        try world.mint(10_000, to: 0)
        try world.sync(0)
        // A restored copy of the payer pays another payee at the same ledger size.
        var copy = world.wallets[0]
        copy.time += 5
        let first = try world.pay(2_000, from: 0, to: 1)
        let forked = try copy.pay(world.wallets[2].walletID, amount: ClearingWorld.eur(3_000))
        try world.credit(first, by: 1)
        let verdict = TransferCheck.evaluate(
            forked, walletID: world.wallets[2].walletID, payerLog: copy.log, state: world.wallets[2].state,
            policy: world.policy)
        try #require(try world.wallets[2].carryOut(verdict) != nil)
        let one = try world.sync(1)
        #expect(one.evidence.isEmpty)
        let two = try world.sync(2)
        #expect(two.evidence.count == 1)
        let listings = try world.book.listings(now: world.time, unsyncedAfter: 1_000_000)
        #expect(listings.contains { $0.wallet == world.wallets[0].walletID && $0.grounds == .proven })
        let evidence = try #require(world.store.allEvidence().first)
        #expect(evidence.evidence.verify().isProven && evidence.accused == world.wallets[0].walletID)
    }

    @Test("Entries of another issuer's asset and malformed payloads are refused with their codes")
    func refusedEntries() throws {
        var world = try ClearingWorld(wallets: 1)
        try world.mint(10_000, to: 0)
        let other = try ClearingBook(issuer: Fixture.id(0x77), store: InMemoryClearingStore()).record(
            wallet: world.wallets[0].walletID, entries: world.pending(0),
            checkpoint: try world.wallets[0].checkpoint(), now: world.time, logs: world.log)
        #expect(other.outcomes == [.noRecord, .refused(.otherIssuersAsset)])
        let order = try world.wallets[0].order(to: Fixture.id(0x55), amount: ClearingWorld.eur(100))
        _ = try world.wallets[0].commit(order)
        let entries = world.pending(0)
        let result = try world.book.record(
            wallet: world.wallets[0].walletID, entries: entries, checkpoint: try world.wallets[0].checkpoint(),
            now: world.time, logs: world.log)
        #expect(result.outcomes == [.noRecord, .recorded, .refused(.transferMismatch)])
    }
}
