import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Conservation (docs/CLEARING.md §2.8) on seeded random histories: mints, payments, credits, refusals and
/// reversals, redemptions, and syncs in random order. After every sync the residue of each asset is zero; a
/// dropped record makes it non-zero and names the wallet whose records no longer give its balance.
@Suite("Clearing conservation")
struct ClearingConservationTests {
    /// A random history of `steps` actions over four wallets, syncing at random; checks the residue after
    /// each sync. Returns the world, every wallet and the issuer synced at the end.
    func history(seed: UInt64, steps: Int) throws -> ClearingWorld {
        var world = try ClearingWorld(wallets: 4, seed: seed)
        var random = SeededRandom(seed: seed)
        var inFlight: [(SignedTransfer, Int?)] = []
        let euro = Asset(issuer: world.issuer, currency: .eur)
        for step in 0..<steps {
            let pick = Int(random.next() % 10)
            let wallet = Int(random.next() % 4)
            switch pick {
            case 0, 1: try world.mint(Int64(1_000 + random.next() % 5_000), to: wallet)
            case 2, 3, 4:
                let balance = world.wallets[wallet].state.balance(euro).minorUnits
                guard balance > 0 else { continue }
                let payee = Int(random.next() % 5)
                let target: Int? = payee == 4 ? nil : (payee == wallet ? (payee + 1) % 4 : payee)
                let transfer = try world.pay(1 + Int64(random.next() % UInt64(balance)), from: wallet, to: target)
                inFlight.append((transfer, target))
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
                try expectBalanced(world, "seed \(seed) step \(step)")
            }
        }
        for index in 0..<4 { try world.sync(index) }
        try world.sync(nil)
        try expectBalanced(world, "seed \(seed), all synced")
        return world
    }

    func expectBalanced(_ world: ClearingWorld, _ context: String) throws {
        for report in try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000) {
            #expect(report.residue == 0, "\(context): \(report)")
            #expect(report.walletsWithResidue.isEmpty, "\(context)")
        }
    }

    @Test("The residue is zero after every sync of seeded random histories", arguments: [1, 2, 3] as [UInt64])
    func residueIsZero(seed: UInt64) throws {
        let world = try history(seed: seed, steps: 60)
        let reports = try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000)
        let report = try #require(reports.first, "seed \(seed)")
        #expect(report.minted > 0 && report.unsyncedCount == 0, "seed \(seed)")
        // Long after the last sync every wallet is unsynced: the balances move between terms, the sum holds.
        let later = try #require(
            try world.book.conservation(now: world.time + 10_000_000, unsyncedAfter: 3_600_000).first)
        #expect(later.residue == 0 && later.syncedBalances == 0, "seed \(seed)")
        #expect(later.unsyncedBalances == report.syncedBalances + report.unsyncedBalances, "seed \(seed)")
        #expect(later.unsyncedCount > 0 && later.oldestUnsyncedAge ?? 0 > 3_600_000, "seed \(seed)")
    }

    @Test("A dropped debit leaves a residue that names its payer")
    func droppedRecordNamesWallet() throws {
        let world = try history(seed: 4, steps: 60)
        let debit = try #require(world.store.allDebits().first)
        world.store.dropDebit(debit.key)
        let report = try #require(try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000).first)
        #expect(report.residue != 0)
        #expect(report.walletsWithResidue.map(\.wallet) == [debit.key.payer])
        #expect(report.walletsWithResidue.first?.difference == -debit.amount.money.minorUnits)
    }

    @Test("In-flight payments, unmatched credits and undeposited vouchers are terms of their own")
    func terms() throws {
        var world = try ClearingWorld(wallets: 2)
        try world.mint(10_000, to: 0)
        try world.sync(0)
        try world.sync(nil)
        let transfer = try world.pay(4_000, from: 0, to: 1)
        try world.credit(transfer, by: 1)
        try world.sync(1)
        var report = try #require(try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000).first)
        // Wallet 0's last-known balance still holds the 40.00 wallet 1 was credited.
        #expect(report.creditsWithoutDebit == 4_000 && report.syncedBalances == 14_000 && report.residue == 0)
        try world.sync(0)
        report = try #require(try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000).first)
        #expect(report.creditsWithoutDebit == 0 && report.debitsWithoutCredit == 0 && report.residue == 0)
        // A voucher the issuer synced that its recipient has not deposited yet is still owed.
        try world.mint(500, to: 1)
        try world.sync(nil)
        report = try #require(try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000).first)
        #expect(report.undepositedVouchers == 500 && report.residue == 0)
    }

    @Test("A sum past Int64 is an error, not a trap")
    func overflow() throws {
        var world = try ClearingWorld(wallets: 2)
        try world.mint(Int64.max, to: 0)
        try world.mint(1, to: 1)
        try world.sync(0)
        try world.sync(1)
        #expect(throws: ClearingBookError.self) {
            try world.book.conservation(now: world.time, unsyncedAfter: 3_600_000)
        }
    }
}
