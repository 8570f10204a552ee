import Foundation
import SecureTestSupport
import Testing

/// Rotate, then pay someone paid before: two real `secure` processes over loopback TCP, where the payee's
/// lookup waits for the payer's rotated key-event log while the payer's offer is already on its way.
@Suite("secure pay and receive across key rotations", .serialized)
struct PeerRotationCLITests {
    typealias World = WalletCLITests.World

    /// One payment of `amount` from `payer` to `payee` with simulated ranging; both sides must succeed.
    static func pay(
        _ world: World, _ amount: String, from payer: String, to payee: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let (receiver, paying) = try PeerCLITests.session(
            world, receiver: ["--allow-simulated-ranging", "--distance", "420"],
            payer: ["--amount", amount, "--category", "food", "--allow-simulated-ranging", "--distance", "400"],
            payerName: payer, payeeName: payee)
        #expect(paying.status == 0, "payer \(payer): \(paying.output) \(paying.stderr)", sourceLocation: sourceLocation)
        #expect(
            receiver.status == 0, "payee \(payee): \(receiver.output) \(receiver.stderr)",
            sourceLocation: sourceLocation)
    }

    static func rotate(_ world: World, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let rotated = try world.run(
            ["keys", "rotate", "--backup-pin-source", "file:toks/\(name)-bk.pin"] + world.wallet(name))
        #expect(rotated.status == 0, "\(name) rotate: \(rotated.stderr)", sourceLocation: sourceLocation)
    }

    static func balance(_ world: World, _ name: String) throws -> String {
        try world.run(["balance"] + world.wallet(name)).output
    }

    static func verifyBoth(_ world: World) throws {
        for name in ["alice", "bob"] {
            let verified = try world.run(["ledger", "verify"] + world.wallet(name))
            #expect(verified.status == 0, "\(name): \(verified.output) \(verified.stderr)")
        }
    }

    @Test func payerRotatesThenPaysAPayeePaidBefore() throws {
        let world = try PeerCLITests.funded()
        try Self.pay(world, "1.00 EUR", from: "alice", to: "bob")
        try Self.rotate(world, "alice")
        try Self.pay(world, "2.00 EUR", from: "alice", to: "bob")
        #expect(try Self.balance(world, "bob").contains("3.00 EUR"))
        try Self.verifyBoth(world)
    }

    @Test func payeeRotatesThenIsPaidByAPayerWhoPaidBefore() throws {
        let world = try PeerCLITests.funded()
        try Self.pay(world, "1.00 EUR", from: "alice", to: "bob")
        try Self.rotate(world, "bob")
        try Self.pay(world, "2.00 EUR", from: "alice", to: "bob")
        // And back: the rotated wallet pays the one that paid it.
        try Self.pay(world, "0.50 EUR", from: "bob", to: "alice")
        #expect(try Self.balance(world, "bob").contains("2.50 EUR"))
        #expect(try Self.balance(world, "alice").contains("17.50 EUR"))
        try Self.verifyBoth(world)
    }

    @Test func bothRotatedThenPayAgain() throws {
        let world = try PeerCLITests.funded()
        try Self.pay(world, "1.00 EUR", from: "alice", to: "bob")
        try Self.rotate(world, "alice")
        try Self.rotate(world, "bob")
        try Self.pay(world, "2.00 EUR", from: "alice", to: "bob")
        #expect(try Self.balance(world, "alice").contains("17.00 EUR"))
        try Self.verifyBoth(world)
    }

    /// Twenty payments, each after a rotation of one side or the other; every one goes through.
    @Test func aChainOfTwentyPaymentsWithARotationBetweenEach() throws {
        let world = try PeerCLITests.funded()
        try Self.pay(world, "0.10 EUR", from: "alice", to: "bob")
        for index in 1...20 {
            try Self.rotate(world, index.isMultiple(of: 2) ? "bob" : "alice")
            try Self.pay(world, "0.10 EUR", from: "alice", to: "bob")
        }
        #expect(try Self.balance(world, "bob").contains("2.10 EUR"))
        #expect(try Self.balance(world, "alice").contains("17.90 EUR"))
        try Self.verifyBoth(world)
    }
}
