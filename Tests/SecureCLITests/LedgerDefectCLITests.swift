import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// The smaller ledger defects of issue 12, with the stock `secure` binary on real SoftHSM tokens: the same
/// statement gets the same answer every time, one conflict is recorded once, and a payee whose balance is
/// full refuses with a signature instead of failing. The vouchers come from an issuer with a software key
/// (a test issuer the wallets trust), which can sign what `secure mint` never would: two vouchers under one
/// id, or one for the largest amount.
@Suite("Ledger defects: re-deliveries and full balances", .serialized)
struct LedgerDefectCLITests {
    typealias World = WalletCLITests.World

    /// An issuer with a software key (`TestIssuer`), whose card each of `names` trusts with `secure issuer trust`.
    static func issuer(_ world: World, trustedBy names: [String]) throws -> TestIssuer {
        let issuer = try TestIssuer(signer: try SoftwareSigner())
        try issuer.card.text.write(toFile: world.directory + "/soft-issuer.card", atomically: true, encoding: .utf8)
        for name in names {
            let trust = try world.run(["issuer", "trust", "soft-issuer.card"] + world.wallet(name))
            #expect(trust.status == 0, "\(trust.stderr)")
        }
        return issuer
    }

    /// Writes a voucher of `minorUnits` euro cents to `name`'s wallet, signed by `issuer`, into `file`.
    static func voucher(
        _ world: World, _ file: String, to name: String, minorUnits: Int64, issuer: inout TestIssuer,
        id: VoucherID = .random()
    ) throws {
        let recipient = try SoundMoneyCLITests.card(world, name).walletID
        let envelope = try issuer.voucher(try Money(minorUnits: minorUnits, currency: .eur), to: recipient, id: id)
        try SoundMoneyCLITests.write(envelope.encoded, world, file)
    }

    /// The wallet's entry count, from `wallet show --json`.
    static func size(_ world: World, _ name: String) throws -> Int {
        let show = try world.run(["wallet", "show", "--json"] + world.wallet(name))
        let row = try JSONSerialization.jsonObject(with: Data(show.stdout)) as? [String: Any]
        return try #require(row?["entries"] as? Int, "\(show.output) \(show.stderr)")
    }

    /// Five deliveries of a second voucher under a recorded voucher id made five conflict entries (and five
    /// checkpoints). Evidence of one conflict is recorded once: every delivery gets the same answer, exit 11
    /// naming the one entry that keeps it, and the ledger grows by one entry.
    @Test func aConflictingVoucherDeliveredFiveTimesIsRecordedOnce() throws {
        let world = try World(wallets: ["alice"])
        var issuer = try Self.issuer(world, trustedBy: ["alice"])
        let id = VoucherID.random()
        try Self.voucher(world, "first", to: "alice", minorUnits: 1000, issuer: &issuer, id: id)
        try Self.voucher(world, "second", to: "alice", minorUnits: 9900, issuer: &issuer, id: id)
        let deposit = try world.run(["deposit", "first"] + world.wallet("alice"))
        #expect(deposit.status == 0, "\(deposit.stderr)")
        let before = try Self.size(world, "alice")
        var answers: [String] = []
        for _ in 0..<5 {
            let again = try world.run(["deposit", "second"] + world.wallet("alice"))
            #expect(again.status == 11, "\(again.stderr)")
            #expect(again.stderr.contains("kept as evidence in entry \(before)"), "\(again.stderr)")
            answers.append(again.stderr)
        }
        #expect(Set(answers).count == 1, "the same statement gets the same answer: \(answers)")
        #expect(try Self.size(world, "alice") == before + 1, "one conflict is one entry")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("10.00 EUR"))
        #expect(try SoundMoneyCLITests.verifies(world, "alice"))
    }

    /// A voucher for another wallet was refused with exit 11 the first time and "already recorded; nothing
    /// changed" with exit 0 after that, so a retrying script believed it had succeeded. It is refused for the
    /// same reason every time, and recorded once.
    @Test func aRefusedVoucherIsRefusedAgainWithTheSameReason() throws {
        let world = try World()
        var issuer = try Self.issuer(world, trustedBy: ["alice"])
        try Self.voucher(world, "for-bob", to: "bob", minorUnits: 1000, issuer: &issuer)
        let before = try Self.size(world, "alice")
        var answers: [String] = []
        for _ in 0..<3 {
            let deposit = try world.run(["deposit", "for-bob"] + world.wallet("alice"))
            #expect(deposit.status == 11, "exit \(deposit.status): \(deposit.output) \(deposit.stderr)")
            #expect(deposit.stderr.contains("refused (wrongRecipient)"), "\(deposit.stderr)")
            answers.append(deposit.stderr)
        }
        #expect(Set(answers).count == 1, "\(answers)")
        #expect(try Self.size(world, "alice") == before + 1, "the refusal is recorded once")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("no money yet"))
        #expect(try SoundMoneyCLITests.verifies(world, "alice"))
    }

    /// Bob's balance is the largest amount a wallet holds. Alice's payment could neither be credited nor
    /// refused: `accept` exited 1 with no receipt and no refusal, and Alice stayed pending for ever. Bob now
    /// refuses it with a signed refusal (reason 9, balanceOverflow), the same one on every re-delivery, and
    /// Alice reverses her debit. A voucher that would overflow is refused with nothing recorded.
    @Test func aPayeeWithAFullBalanceRefusesWithASignatureSoThePayerCanReverse() throws {
        let world = try World()
        var issuer = try Self.issuer(world, trustedBy: ["alice", "bob"])
        try Self.voucher(world, "v-alice", to: "alice", minorUnits: 5000, issuer: &issuer)
        try Self.voucher(world, "v-bob", to: "bob", minorUnits: Int64.max, issuer: &issuer)
        #expect(try world.run(["deposit", "v-alice"] + world.wallet("alice")).status == 0)
        let full = try world.run(["deposit", "v-bob"] + world.wallet("bob"))
        #expect(full.status == 0, "\(full.stderr)")

        try Self.voucher(world, "v-bob-more", to: "bob", minorUnits: 100, issuer: &issuer)
        let bobBefore = try Self.size(world, "bob")
        let overflow = try world.run(["deposit", "v-bob-more"] + world.wallet("bob"))
        #expect(overflow.status == 11, "exit \(overflow.status): \(overflow.stderr)")
        #expect(overflow.stderr.contains("largest amount") && overflow.stderr.contains("Nothing was recorded"))
        #expect(try Self.size(world, "bob") == bobBefore)

        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(
            ["accept", "t1", "--no-proximity", "--receipt-out", "r1", "--refusal-out", "refusal1"] + world.wallet("bob")
        )
        #expect(accept.status == 11, "exit \(accept.status): \(accept.stderr)")
        #expect(accept.stderr.contains("refused (balanceOverflow)"), "\(accept.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/r1"), "no receipt for a refused transfer")
        let again = try world.run(
            ["accept", "t1", "--no-proximity", "--refusal-out", "refusal2"] + world.wallet("bob"))
        #expect(again.status == 11 && again.stderr.contains("refused (balanceOverflow)"), "\(again.stderr)")
        let first = try #require(try Envelope.decode(try SoundMoneyCLITests.read(world, "refusal1")))
        let second = try #require(try Envelope.decode(try SoundMoneyCLITests.read(world, "refusal2")))
        #expect(try first.refusal().0 == second.refusal().0, "a re-delivery gets the same signed refusal")
        #expect(try first.refusal().0.payload.reason == .balanceOverflow)

        let reverse = try world.run(["reverse", "refusal1"] + world.wallet("alice"))
        #expect(reverse.status == 0, "\(reverse.stderr)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("50.00 EUR"))
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
        #expect(try SoundMoneyCLITests.verifies(world, "alice") && SoundMoneyCLITests.verifies(world, "bob"))
    }
}
