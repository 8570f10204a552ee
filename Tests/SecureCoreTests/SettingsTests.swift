import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

@Suite("Settings entries and offline limits")
struct SettingsTests {
    static let usd = Currency.usd

    /// The vectors of docs/PROTOCOL.md, "Settings entries".
    static let vectors: [(id: String, change: SettingsChange, hex: String)] = [
        ("anchor-file", .anchorKind(.file), "0302"),
        ("anchor-token", .anchorKind(.token), "0301"),
        (
            "limit-150-eur-day", .offlineLimit(OfflineLimit(amount: Fixture.eur(15_000), window: .day)),
            "04455552020000000000003a9801"
        ),
        (
            "limit-1000-usd-week",
            .offlineLimit(OfflineLimit(amount: try! Money(minorUnits: 100_000, currency: .usd), window: .week)),
            "045553440200000000000186a002"
        ),
        ("allow-unenforced-pin", .tokenAllowance(.unenforcedPIN, allowed: true), "0501"),
        ("require-unproven-origin", .tokenAllowance(.unprovenOrigin, allowed: false), "0600"),
    ]

    @Test("vectors: each change encodes to its documented bytes and decodes back")
    func vectors() throws {
        for (id, change, hex) in Self.vectors {
            #expect(Hex.encode(change.payload) == hex, "vector \(id)")
            #expect(try SettingsChange.decode(payload: Hex.decode(hex)!) == change, "vector \(id)")
        }
    }

    @Test("every truncation and extension, unknown and reserved tags and values are refused without a trap")
    func malformed() throws {
        for (id, change, _) in Self.vectors {
            let bytes = change.payload
            for length in 0..<bytes.count {
                #expect(throws: FormatError.self, "vector \(id) cut to \(length)") {
                    try SettingsChange.decode(payload: Array(bytes.prefix(length)))
                }
            }
            #expect(throws: FormatError.self, "vector \(id) extended") {
                try SettingsChange.decode(payload: bytes + [0])
            }
        }
        for tag: UInt8 in [0, 1, 2, 7, 255] {
            #expect(throws: FormatError.self, "tag \(tag)") { try SettingsChange.decode(payload: [tag, 1]) }
        }
        for kind: UInt8 in [0, 3, 255] {
            #expect(throws: FormatError.self, "anchor kind \(kind)") { try SettingsChange.decode(payload: [3, kind]) }
        }
        for tag: UInt8 in [5, 6] {
            for value: UInt8 in [2, 255] {
                #expect(throws: FormatError.self, "allowance \(tag) value \(value)") {
                    try SettingsChange.decode(payload: [tag, value])
                }
            }
        }
        var limit = SettingsChange.offlineLimit(OfflineLimit(amount: Fixture.eur(1), window: .day)).payload
        for window: UInt8 in [0, 4, 255] {
            limit[limit.count - 1] = window
            #expect(throws: FormatError.self, "window \(window)") { try SettingsChange.decode(payload: limit) }
        }
        // A negative amount (the sign bit of the minor units).
        limit[limit.count - 1] = 1
        limit[5] = 0x80
        #expect(throws: FormatError.self) { try SettingsChange.decode(payload: limit) }
    }

    @Test("a settings entry names no amount, statement or party; the ledger derives the settings, last one wins")
    func ledgerDerivesSettings() throws {
        var wallet = try SoftwareWallet(seed: 7)
        #expect(wallet.state.settings == WalletSettings())
        #expect(wallet.state.settings.anchorKind == .token)
        #expect(wallet.state.settings.offlineLimit(.eur) == OfflineLimit(amount: Fixture.eur(15_000), window: .day))
        #expect(wallet.state.settings.offlineLimit(.jpy).amount.minorUnits == 150)
        let limit = OfflineLimit(amount: Fixture.eur(50_000), window: .week)
        for change in [
            SettingsChange.anchorKind(.file), .offlineLimit(limit), .anchorKind(.token),
            .tokenAllowance(.unprovenOrigin, allowed: true), .tokenAllowance(.unenforcedPIN, allowed: true),
            .tokenAllowance(.unenforcedPIN, allowed: false),
        ] {
            _ = try wallet.append(EntryDraft(kind: .settings, amount: nil, statement: nil, payload: change.payload))
        }
        #expect(wallet.state.settings.anchorKind == .token)
        #expect(wallet.state.settings.offlineLimit(.eur) == limit)
        #expect(wallet.state.settings.longestOfflineWindow == .week)
        #expect(wallet.state.settings.tokenAllowances == [.unprovenOrigin])
        #expect(try WalletSettings.replay(wallet.entries) == wallet.state.settings)
        #expect(try LedgerState.replay(wallet.entries) == wallet.state)

        let link = Digest32.zero
        let payload = SettingsChange.anchorKind(.file).payload
        func make(amount: AssetAmount? = nil, counterparty: [UInt8] = [], payload: [UInt8]) throws {
            _ = try LedgerEntry(
                position: 0, id: Fixture.id(1), kind: .settings, amount: amount, counterparty: counterparty,
                time: 0, payload: payload, previousLink: link)
        }
        try make(payload: payload)
        #expect(throws: (any Error).self) {
            try make(amount: AssetAmount(issuer: Fixture.id(0x1A), money: Fixture.eur(1)), payload: payload)
        }
        #expect(throws: (any Error).self) { try make(counterparty: [1], payload: payload) }
        #expect(throws: (any Error).self) { try make(payload: []) }
        #expect(throws: (any Error).self) { try make(payload: [3, 9]) }
    }

    @Test("the tally counts one payer's credits in one currency within the rolling window, and nothing else")
    func tally() throws {
        let payer: WalletID = Fixture.id(0xA1)
        let other: WalletID = Fixture.id(0xB2)
        let day = OfflineWindow.day.milliseconds
        let now: Int64 = 10 * day
        var position: UInt64 = 0
        func credit(_ amount: Money, from wallet: WalletID, at time: Int64, kind: EntryKind = .paymentIn) throws
            -> LedgerEntry
        {
            position += 1
            return try LedgerEntry(
                position: position, id: Fixture.id(UInt8(position)), kind: kind,
                amount: AssetAmount(issuer: Fixture.id(0x1A), money: amount),
                counterparty: wallet.bytes, time: time, statement: Fixture.statement(signer: 1, id: 1, payload: 1),
                previousLink: Digest32.zero)
        }
        let entries = [
            try credit(Fixture.eur(1_000), from: payer, at: now - day), // on the window's edge: outside
            try credit(Fixture.eur(2_000), from: payer, at: now - day + 1),
            try credit(Fixture.eur(4_000), from: payer, at: now),
            try credit(Fixture.eur(8_000), from: other, at: now),
            try credit(try Money(minorUnits: 16_000, currency: .usd), from: payer, at: now),
            try credit(Fixture.eur(32_000), from: payer, at: now, kind: .deposit),
        ]
        let credits = PayerOfflineCredits.tally(payer: payer, settings: WalletSettings(), time: now, entries: entries)
        let euros = credits.allowance(.eur)
        #expect(euros.credited == Fixture.eur(6_000))
        #expect(euros.remaining == Fixture.eur(9_000))
        #expect(euros.permits(Fixture.eur(9_000)))
        #expect(!euros.permits(Fixture.eur(9_001)))
        #expect(!euros.permits(try Money(minorUnits: 1, currency: .usd)))
        #expect(credits.allowance(.usd).credited.minorUnits == 16_000)
        #expect(!credits.allowance(.usd).permits(try Money(minorUnits: 1, currency: .usd)))
        #expect(PayerOfflineCredits.earliestTime(settings: WalletSettings(), time: now) == now - day)

        // Approvals not paid yet count whatever their age, so an approved payment credited later stays within
        // the limit of the window it lands in.
        let withApproval = PayerOfflineCredits.tally(
            payer: payer, settings: WalletSettings(), time: now, entries: entries, approved: [Fixture.eur(3_000)])
        #expect(withApproval.allowance(.eur).credited == Fixture.eur(9_000))
        #expect(withApproval.allowance(.eur).permits(Fixture.eur(6_000)))
        #expect(!withApproval.allowance(.eur).permits(Fixture.eur(6_001)))

        // A week's limit counts the older credit too; a sum past Int64.max saturates and permits nothing.
        let weekly = try WalletSettings().applying(
            .offlineLimit(OfflineLimit(amount: Fixture.eur(100_000), window: .week)))
        #expect(
            PayerOfflineCredits.tally(payer: payer, settings: weekly, time: now, entries: entries).allowance(.eur)
                .credited == Fixture.eur(7_000))
        let huge = [
            try credit(Fixture.eur(.max), from: payer, at: now), try credit(Fixture.eur(.max), from: payer, at: now),
        ]
        let saturated = PayerOfflineCredits.tally(payer: payer, settings: weekly, time: now, entries: huge)
        #expect(saturated.allowance(.eur).credited == Fixture.eur(.max))
        #expect(!saturated.allowance(.eur).permits(Fixture.eur(1)))
    }

    @Test("peer mode: an offer past the payee's offline limit for this payer is refused before any prompt or ready")
    func payeeRefusesBeforeReady() throws {
        var config = PeerSimulation.Config()
        config.payeeOfflineLimit = OfflineLimit(amount: Fixture.eur(449), window: .day)
        var refused = try PeerSimulation(config)
        try refused.run()
        PeerMachineTests.expectFailed(refused, .offlineLimitExceeded)
        #expect(refused.approvals.map(\.role) == [.payer])
        #expect(!refused.sent.contains { $0.name == "ready" })

        // 9.00 a day: two payments of 4.50 are credited, the third is refused, and nothing more moves.
        config.payeeOfflineLimit = OfflineLimit(amount: Fixture.eur(900), window: .day)
        var sim = try PeerSimulation(config)
        try sim.run()
        PeerMachineTests.expectPaid(sim)
        try sim.newSession(retrying: nil)
        try sim.run()
        #expect(sim.payeeBalance == Fixture.eur(900))
        try sim.newSession(retrying: nil)
        try sim.run()
        #expect(sim.payeeMachine.outcome == .failed(.offlineLimitExceeded, byPeer: false))
        #expect(sim.payerMachine.outcome == .failed(.offlineLimitExceeded, byPeer: true))
        let payerLeft = try PeerSimulation.total.subtracting(Fixture.eur(900))
        #expect(sim.payeeBalance == Fixture.eur(900) && sim.payerBalance == payerLeft)
    }
}
