import SecureTestSupport
import Testing

@testable import SecureCore

@Suite("Ledger state and replay")
struct LedgerStateTests {
    let eur = Fixture.eur

    @Test(
        "a debit equal to the balance succeeds; one greater is refused and changes nothing",
        arguments: [
            (Int64(500), Int64(500), true), (500, 501, false), (500, 1, true), (0, 1, false),
        ])
    func balanceRule(balance: Int64, debit: Int64, accepted: Bool) throws {
        var ledger = LedgerBuilder()
        try ledger.append(.keyEvent, nil, payload: [1])
        if balance > 0 { try ledger.deposit(eur(balance)) }
        let before = ledger.state
        do {
            try ledger.pay(eur(debit))
            #expect(accepted, "case \(balance)/\(debit)")
            #expect(ledger.state.balance(Fixture.euro) == eur(balance - debit))
        } catch let error as LedgerError {
            #expect(!accepted && error.code == .insufficientFunds, "case \(balance)/\(debit)")
            #expect(ledger.state == before, "a refused entry changed the state")
        }
    }

    @Test("sequence rules: position, link and time")
    func sequenceRules() throws {
        var ledger = LedgerBuilder()
        try ledger.append(.keyEvent, nil, payload: [1])
        let good = try ledger.draft(.keyEvent, nil)
        let state = ledger.state
        func copy(position: UInt64? = nil, time: Int64? = nil, link: Digest32? = nil) throws -> LedgerEntry {
            try LedgerEntry(
                position: position ?? good.position, id: good.id, kind: .keyEvent, amount: nil,
                time: time ?? good.time, previousLink: link ?? good.previousLink)
        }
        #expect(throws: LedgerError(.positionGap, "")) { try state.applying(copy(position: 2)) }
        #expect(throws: LedgerError(.linkMismatch, "")) { try state.applying(copy(link: Fixture.id(1))) }
        #expect(throws: LedgerError(.timeWentBackwards, "")) { try state.applying(copy(time: good.time - 1)) }
        #expect(try state.applying(good).size == 2)
    }

    @Test("statements are idempotent per signer: duplicates and conflicts are refused, lookups tell them apart")
    func statements() throws {
        var ledger = LedgerBuilder()
        let voucher = Fixture.statement(signer: 0x11, id: 7, payload: 0xA0)
        try ledger.append(.deposit, eur(100), statement: voucher)
        #expect(ledger.state.lookup(voucher) == .duplicate(position: 0))
        let conflicting = Fixture.statement(signer: 0x11, id: 7, payload: 0xA1)
        #expect(ledger.state.lookup(conflicting) == .conflict(position: 0))
        // The same id from another signer is another statement.
        let otherIssuer = Fixture.statement(signer: 0x12, id: 7, payload: 0xA0)
        #expect(ledger.state.lookup(otherIssuer) == .new)
        let before = ledger.state
        #expect(throws: LedgerError(.duplicateStatement, "")) {
            try ledger.append(.deposit, eur(100), statement: voucher)
        }
        #expect(throws: LedgerError(.conflictingStatement, "")) {
            try ledger.append(.deposit, eur(100), statement: conflicting)
        }
        #expect(ledger.state == before)
        try ledger.append(.conflictingStatement, nil, statement: conflicting)
        #expect(throws: LedgerError(.noConflict, "")) {
            try ledger.append(.conflictingStatement, nil, statement: voucher)
        }
        // One conflict is recorded once: the same second payload is now a duplicate of the entry keeping it.
        #expect(ledger.state.lookup(conflicting) == .duplicate(position: 1))
        #expect(throws: LedgerError(.duplicateStatement, "")) {
            try ledger.append(.conflictingStatement, nil, statement: conflicting)
        }
        #expect(throws: LedgerError(.duplicateStatement, "")) {
            try ledger.append(.deposit, eur(100), statement: conflicting)
        }
        // A third payload under the same id is a conflict of its own.
        let third = Fixture.statement(signer: 0x11, id: 7, payload: 0xA2)
        #expect(ledger.state.lookup(third) == .conflict(position: 0))
        try ledger.append(.deposit, eur(100), statement: otherIssuer)
        #expect(ledger.state.balance(Fixture.euro) == eur(200))
    }

    @Test("a reversal credits back one unreversed payment out of the same amount, once")
    func reversals() throws {
        var ledger = LedgerBuilder()
        try ledger.deposit(eur(1000))
        let transfer = try ledger.pay(eur(300))
        let refusal = StatementReference(
            signer: Fixture.id(0x77), id: transfer.id, payloadDigest: Fixture.id(0xEF))
        #expect(throws: LedgerError(.invalidReversal, "")) {
            try ledger.append(.reversal, eur(299), statement: refusal)
        }
        let unknown = StatementReference(
            signer: Fixture.id(0x77), id: Fixture.id(0x99), payloadDigest: Fixture.id(0xEF))
        #expect(throws: LedgerError(.invalidReversal, "")) {
            try ledger.append(.reversal, eur(300), statement: unknown)
        }
        try ledger.append(.reversal, eur(300), statement: refusal)
        #expect(ledger.state.balance(Fixture.euro) == eur(1000))
        #expect(throws: LedgerError(.invalidReversal, "")) {
            try ledger.append(.reversal, eur(300), statement: refusal)
        }
    }

    @Test("budgets are enforced: override needed above the limit, hard caps refuse, windows roll over")
    func budgets() throws {
        var ledger = LedgerBuilder()
        try ledger.deposit(eur(100_000))
        try ledger.setBudget("food", eur(1000))
        try ledger.pay(eur(700), category: "food")
        #expect(ledger.state.windowTotals["food"]?.spent == eur(700))
        guard case .alert = try ledger.state.budgetVerdict(category: "food", payment: eur(200), time: ledger.time)
        else {
            Issue.record("expected an alert")
            return
        }
        #expect(throws: LedgerError(.overBudget, "")) { try ledger.pay(eur(400), category: "food") }
        try ledger.pay(eur(400), category: "food", flags: .budgetOverride)
        #expect(ledger.state.windowTotals["food"]?.spent == eur(1100))
        #expect(throws: LedgerError(.budgetCurrencyMismatch, "")) {
            try ledger.deposit(Money(minorUnits: 50, currency: .usd))
            try ledger.pay(Money(minorUnits: 1, currency: .usd), category: "food")
        }
        // The next UTC day opens a new window.
        ledger.time += 86_400_000
        try ledger.pay(eur(100), category: "food")
        #expect(ledger.state.windowTotals["food"]?.spent == eur(100))
        // A changed limit keeps the window's spending; a hard cap then refuses.
        try ledger.setBudget("food", eur(150), hardCap: true)
        #expect(ledger.state.windowTotals["food"]?.spent == eur(100))
        #expect(throws: LedgerError(.hardCapExceeded, "")) {
            try ledger.pay(eur(51), category: "food", flags: .budgetOverride)
        }
        // A changed window starts afresh; removal forgets the budget.
        try ledger.setBudget("food", eur(150), window: .week, hardCap: true)
        #expect(ledger.state.windowTotals["food"] == nil)
        try ledger.append(.budgetChange, nil, category: "food", payload: BudgetChange.remove(category: "food").payload)
        #expect(throws: LedgerError(.noSuchBudget, "")) {
            try ledger.append(
                .budgetChange, nil, category: "food", payload: BudgetChange.remove(category: "food").payload)
        }
        try ledger.pay(eur(5000), category: "food")
    }

    @Test("SplitMix64 gives the reference sequence")
    func seededRandom() {
        var random = SeededRandom(seed: 0)
        #expect(
            [random.next(), random.next(), random.next()] == [
                0xe220_a839_7b1d_cdaf, 0x6e78_9e6a_a1b9_65f4, 0x06c4_5d18_8009_454f,
            ])
    }

    @Test("an issuer's ledger mints and redeems its own asset only; any other ledger never does")
    func issuerRole() throws {
        let signer = try SoftwareSigner()
        let inception = try SignedKeyEvent(
            KeyEvent.inception(
                signingKey: signer.publicKey, nextKey: signer.publicKey, agreementKey: signer.publicKey, issuer: true),
            signer: signer)
        let own = WalletID(inception: inception.event)
        var issuer = LedgerBuilder()
        try issuer.append(.keyEvent, nil, payload: inception.encoded)
        #expect(issuer.state.isIssuer && issuer.state.owner == own)
        try issuer.append(.mint, eur(500), issuer: own, statement: Fixture.statement(signer: 1, id: 1, payload: 1))
        #expect(issuer.state.balance(Asset(issuer: own, currency: .eur)) == eur(500), "outstanding")
        let invalid = LedgerError(.invalidEntry, "")
        #expect(throws: invalid, "another issuer's asset") {
            try issuer.append(.mint, eur(1), statement: Fixture.statement(signer: 1, id: 2, payload: 2))
        }
        #expect(throws: invalid, "an issuer holds no money") { try issuer.deposit(eur(1)) }
        #expect(throws: LedgerError(.insufficientFunds, ""), "more than outstanding") {
            try issuer.append(
                .redemption, eur(501), issuer: own, statement: Fixture.statement(signer: 2, id: 3, payload: 3))
        }
        try issuer.append(
            .redemption, eur(200), issuer: own, statement: Fixture.statement(signer: 2, id: 3, payload: 3))
        #expect(issuer.state.balance(Asset(issuer: own, currency: .eur)) == eur(300))
        #expect(try LedgerState.replay(issuer.entries) == issuer.state)

        // An ordinary wallet's ledger (entry 0 not an issuer's inception) never mints or redeems.
        var ordinary = LedgerBuilder()
        try ordinary.append(.keyEvent, nil, payload: [1])
        #expect(!ordinary.state.isIssuer)
        #expect(throws: invalid) {
            try ordinary.append(.mint, eur(1), statement: Fixture.statement(signer: 1, id: 1, payload: 1))
        }
        try ordinary.deposit(eur(100))
        #expect(throws: invalid) {
            try ordinary.append(.redemption, eur(1), statement: Fixture.statement(signer: 1, id: 2, payload: 2))
        }
    }

    @Test(
        "replay reproduces the state of a random ledger exactly; refusals change nothing",
        arguments: [1, 2, 3, 42, 2024] as [UInt64])
    func replayProperty(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var ledger = LedgerBuilder()
        // Three issuers' money in three currencies: nine assets, each balance kept apart.
        var model: [Asset: Int64] = [:]
        var refusals = 0
        let currencies: [Currency] = [.eur, .jpy, .kwd]
        let issuers: [UInt8] = [0, 1, 2]
        try ledger.append(.keyEvent, nil, payload: [0])
        try ledger.setBudget("food", eur(5000), window: .day, zone: "Europe/Berlin")
        try ledger.setBudget("fun", eur(2000), window: .week, hardCap: true, zone: "America/New_York")
        var transfers: [(StatementReference, AssetAmount)] = []
        for _ in 0..<400 {
            ledger.time += Int64(random.next() % 20_000_000)
            let currency = currencies[Int(random.next() % 3)]
            let issuer = issuers[Int(random.next() % 3)]
            let amount = try Money(minorUnits: Int64(random.next() % 3000) + 1, currency: currency)
            let asset = Asset(issuer: Fixture.id(issuer), currency: currency)
            let before = ledger.state
            do {
                switch random.next() % 6 {
                case 0, 1:
                    try ledger.deposit(amount, issuer: issuer)
                    model[asset, default: 0] += amount.minorUnits
                case 2, 3:
                    let category = ["", "food", "fun"][Int(random.next() % 3)]
                    let flags: EntryFlags = random.next() % 2 == 0 ? .budgetOverride : []
                    let transfer = try ledger.pay(amount, issuer: asset.issuer, category: category, flags: flags)
                    model[asset, default: 0] -= amount.minorUnits
                    transfers.append((transfer, AssetAmount(issuer: asset.issuer, money: amount)))
                case 4:
                    guard let (transfer, paid) = transfers.randomElement(using: &random) else { continue }
                    let refusal = StatementReference(
                        signer: Fixture.id(0x55), id: transfer.id,
                        payloadDigest: .random(using: &random))
                    try ledger.append(.reversal, paid.money, issuer: paid.issuer, statement: refusal)
                    model[paid.asset, default: 0] += paid.money.minorUnits
                default:
                    try ledger.setBudget(
                        "food", eur(Int64(random.next() % 10_000)), window: .day, zone: "Europe/Berlin")
                }
            } catch is LedgerError {
                refusals += 1
                #expect(ledger.state == before, "seed \(seed): a refused entry changed the state")
            }
            for (asset, units) in model {
                #expect(ledger.state.balance(asset).minorUnits == units && units >= 0, "seed \(seed)")
            }
        }
        let replayed = try LedgerState.replay(ledger.entries)
        #expect(replayed == ledger.state, "seed \(seed): replay differs")
        #expect(refusals > 0 && ledger.entries.count > 100, "seed \(seed): the simulation exercised too little")
        // Replay from decoded bytes, as a store would, gives the same state too.
        let decoded = try ledger.entries.map { try #require(try LedgerEntry.decode($0.encoded)) }
        #expect(try LedgerState.replay(decoded) == ledger.state, "seed \(seed)")
    }
}
