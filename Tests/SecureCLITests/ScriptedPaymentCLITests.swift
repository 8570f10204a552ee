import Foundation
import SecureTestSupport
import Testing

/// Issue 13, case 6: a script pays only whom it means to. `--expect-payee` pins the payee's wallet id (its
/// key-event log proves the key that signs in the session), `--expect-payer` the payer's, and answering a
/// request with `--yes` needs `--max-amount`.
@Suite("Scripted payments pay only whom they mean to", .serialized)
struct ScriptedPaymentCLITests {
    typealias World = WalletCLITests.World
    static let ranging = ["--allow-simulated-ranging", "--distance", "400"]

    @Test func expectedPayeeAndPayerAreEnforcedBeforeAnyDebit() throws {
        let world = try World(wallets: ["alice", "bob", "carol"])
        try world.fund("alice", "20.00 EUR")
        // Carol answers at the address, but Alice's script expects Bob: declined, nothing moves.
        let (carol, wrong) = try PeerCLITests.session(
            world, receiver: Self.ranging,
            payer: ["--amount", "4.00 EUR", "--category", "x", "--expect-payee", "bob.card"] + Self.ranging,
            payeeName: "carol")
        let bobID = try Self.id(world, "bob")
        #expect(wrong.status == 11 && wrong.output.contains("not \(bobID) as expected"), "\(wrong.output)")
        #expect(carol.status != 0)
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("20.00 EUR"))
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
        // Bob, by wallet id: paid.
        let (bob, right) = try PeerCLITests.session(
            world, receiver: Self.ranging,
            payer: ["--amount", "4.00 EUR", "--category", "x", "--expect-payee", try Self.id(world, "bob")]
                + Self.ranging)
        #expect(right.status == 0 && bob.status == 0, "\(right.output) \(right.stderr)")
        // A receiver expecting Carol declines Alice.
        let (declining, refused) = try PeerCLITests.session(
            world, receiver: ["--expect-payer", "carol.card"] + Self.ranging,
            payer: ["--amount", "1.00 EUR", "--category", "x"] + Self.ranging)
        #expect(declining.status == 11 && declining.output.contains("as expected"), "\(declining.output)")
        #expect(refused.status == 11)
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("16.00 EUR"))
    }

    @Test func answeringARequestWithYesNeedsAMaximum() throws {
        let world = try World()
        try world.fund("alice", "20.00 EUR")
        let unbounded = try world.run(
            ["pay", "--to", "127.0.0.1:9", "--yes", "--category", "x"] + Self.ranging + world.wallet("alice"))
        #expect(unbounded.status == 2 && unbounded.stderr.contains("--max-amount"), "\(unbounded.stderr)")
        let (receiver, payer) = try PeerCLITests.session(
            world, receiver: ["--request", "15.00 EUR"] + Self.ranging,
            payer: ["--category", "x", "--max-amount", "10.00 EUR"] + Self.ranging)
        #expect(payer.status == 11 && payer.output.contains("more than --max-amount"), "\(payer.output)")
        #expect(receiver.status != 0)
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("20.00 EUR"))
        let (paidReceiver, paid) = try PeerCLITests.session(
            world, receiver: ["--request", "5.00 EUR"] + Self.ranging,
            payer: ["--category", "x", "--max-amount", "10.00 EUR"] + Self.ranging)
        #expect(paid.status == 0 && paidReceiver.status == 0, "\(paid.output) \(paid.stderr)")
    }

    static func id(_ world: World, _ name: String) throws -> String {
        try SoundMoneyCLITests.card(world, name).walletID.hex
    }
}
