import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The payment rules a till needs (docs/TILL.md §1.5, §7), on the pure machines run against each other: a
/// till's payer masks its wallet's refusals as 21, a wallet's own refusal ends like a decline, a retry
/// ignores the request of a payee that opens with one, and a PIN the token refuses is failure 14.
@Suite("Till rules on the peer machines")
struct TillRulesTests {
    static func run(_ change: (inout PeerSimulation.Config) -> Void) throws -> PeerSimulation {
        var config = PeerSimulation.Config()
        config.request = "Till"
        change(&config)
        var sim = try PeerSimulation(config)
        try sim.run()
        return sim
    }

    /// The failure codes sent in the session (either side; in these sessions only the payer sends one).
    static func failures(_ sim: PeerSimulation) -> [PeerFailureReason] {
        sim.sent.compactMap { message in
            if case .failure(let failure) = message { return failure.reason }
            return nil
        }
    }

    static func setBudget(_ sim: inout PeerSimulation, hardCap: Bool) throws {
        let budget = try Budget(
            category: "food", limit: Fixture.eur(100), window: .month, isHardCap: hardCap, timeZoneIdentifier: "UTC")
        try sim.payer.append(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.set(budget).payload
            ))
        try sim.newSession(retrying: nil)
    }

    @Test("a till's payer sends 21 for its balance and its budget; its own outcome keeps the reason")
    func maskedRefusals() throws {
        // The balance: 5 without masking, 21 with.
        let plain = try Self.run { $0.amount = 10_001 }
        #expect(plain.payerMachine.outcome == .failed(.insufficientFunds, byPeer: false))
        #expect(plain.payeeMachine.outcome == .failed(.insufficientFunds, byPeer: true))
        let masked = try Self.run {
            $0.amount = 10_001
            $0.payerMasksWalletRefusals = true
        }
        #expect(masked.payerMachine.outcome == .failed(.insufficientFunds, byPeer: false))
        #expect(masked.payeeMachine.outcome == .failed(.refusedByPayerWallet, byPeer: true))
        #expect(Self.failures(masked) == [.refusedByPayerWallet], "\(masked.sent.map(\.name))")
        PeerMachineTests.expectFailed(masked, .insufficientFunds)

        // The budget: a hard cap, and over budget without an override; both are 4 locally, 21 on the wire.
        for hardCap in [true, false] {
            var config = PeerSimulation.Config()
            config.request = "Till"
            config.category = "food"
            config.payerMasksWalletRefusals = true
            var sim = try PeerSimulation(config)
            try Self.setBudget(&sim, hardCap: hardCap)
            try sim.run()
            #expect(sim.payerMachine.outcome == .failed(.overBudget, byPeer: false), "hard cap \(hardCap)")
            #expect(sim.payeeMachine.outcome == .failed(.refusedByPayerWallet, byPeer: true), "hard cap \(hardCap)")
            #expect(!Self.failures(sim).contains(.overBudget), "hard cap \(hardCap)")
            PeerMachineTests.expectFailed(sim, .overBudget)
        }

        // Masking touches only the wallet's refusals (4 and 5): every other code goes out as it is.
        var context = PeerSimulation.dummy
        for reason in PeerFailureReason.allCases {
            context.masksWalletRefusals = false
            #expect(context.peerReason(reason) == reason)
            context.masksWalletRefusals = true
            let masked = reason == .overBudget || reason == .insufficientFunds
            #expect(context.peerReason(reason) == (masked ? .refusedByPayerWallet : reason), "\(reason)")
        }
    }

    @Test("the payer's wallet refusing by its own policy ends like a decline, as 21, at the category or the approval")
    func walletRefusals() throws {
        for wait in [PeerWait.category, .approval] {
            for masks in [false, true] {
                let sim = try Self.run {
                    $0.payerRefusesAt = wait
                    $0.payerMasksWalletRefusals = masks
                }
                #expect(sim.payerMachine.outcome == .failed(.refusedByPayerWallet, byPeer: false), "\(wait) \(masks)")
                #expect(sim.payeeMachine.outcome == .failed(.refusedByPayerWallet, byPeer: true), "\(wait) \(masks)")
                #expect(!sim.sent.contains { $0.name == "offer" }, "\(wait): no offer went out")
                PeerMachineTests.expectFailed(sim, .refusedByPayerWallet)
            }
        }
        // Once the offer is out it is too late: the refusal is ignored and the payment goes on.
        var late = try PeerSimulation(
            {
                var config = PeerSimulation.Config()
                config.request = "Till"
                return config
            }())
        late.pauseAfter = 3 // both hellos and the request are in: the payer's offer is on its way
        try late.run()
        #expect(late.payerMachine.walletRefused() == [])
        late.pauseAfter = nil
        try late.pump()
        PeerMachineTests.expectPaid(late)
        #expect(late.payerMachine.walletRefused() == [], "after the end")
    }

    @Test("a retry ignores the request of a payee that opens with one (a till), once; the retry pays")
    func retryAtATill() throws {
        var sim = try Self.run {
            $0.payeeRequestsOnRetry = true
            $0.payerMasksWalletRefusals = true
        }
        PeerMachineTests.expectPaid(sim)
        // Again, with the link cut once `ready` reached the payer: the transfer never arrives.
        try sim.newSession(retrying: nil)
        sim.cutAfter = 8
        try sim.run()
        let pending = try #require(sim.pending)
        #expect(sim.payerMachine.outcome == .unconfirmed(transferID: pending.transfer.payload.order.transferID))
        sim.cutAfter = nil
        try sim.newSession(retrying: pending)
        try sim.run()
        #expect(sim.protocolErrors.isEmpty, "\(sim.protocolErrors)")
        let retryMessages = sim.sent.suffix(5).map(\.name)
        #expect(retryMessages.contains("request") && retryMessages.last == "receipt", "\(retryMessages)")
        guard case .paid? = sim.payerMachine.outcome, case .received? = sim.payeeMachine.outcome else {
            Issue.record(
                "\(String(describing: sim.payerMachine.outcome)) \(String(describing: sim.payeeMachine.outcome))")
            return
        }
        #expect(sim.payeeBalance == Fixture.eur(900) && sim.payerBalance == Fixture.eur(10_000 - 900))

        // A second request in one retry is a violation, after the debit: unconfirmed, never lost.
        var twice = try Self.run { $0.payeeRequestsOnRetry = true }
        try twice.newSession(retrying: nil)
        twice.cutAfter = 8
        try twice.run()
        let again = try #require(twice.pending)
        twice.cutAfter = nil
        try twice.newSession(retrying: again)
        twice.pauseAfter = 3 // hellos, then the request reaches the payer and is ignored
        try twice.run()
        #expect(twice.protocolErrors.isEmpty && twice.payerMachine.outcome == nil)
        let request = try #require(
            twice.sent.last {
                if case .request = $0 { return true }
                return false
            })
        try twice.deliver(request, toPayee: false)
        #expect(twice.protocolErrors.count == 1)
        #expect(twice.payerMachine.outcome == .unconfirmed(transferID: again.transfer.payload.order.transferID))
    }

    @Test("a PIN the token refuses at the approval is failure 14 on either machine; nothing moves")
    func tokenRefusesPIN() throws {
        for (flow, request) in [("pay", nil), ("request", "Till")] as [(String, String?)] {
            var config = PeerSimulation.Config()
            config.request = request
            config.tokenRefusesPINOf = .payer
            var payer = try PeerSimulation(config)
            try payer.run()
            #expect(payer.payerMachine.outcome == .failed(.localFailure, byPeer: false), "\(flow)")
            #expect(payer.payeeMachine.outcome == .failed(.localFailure, byPeer: true), "\(flow)")
            PeerMachineTests.expectFailed(payer, .localFailure)

            config.tokenRefusesPINOf = .payee
            var payee = try PeerSimulation(config)
            try payee.run()
            #expect(payee.payeeMachine.outcome == .failed(.localFailure, byPeer: false), "\(flow)")
            #expect(payee.payerMachine.outcome == .failed(.localFailure, byPeer: true), "\(flow)")
            #expect(!payee.sent.contains { $0.name == "reply" }, "\(flow)")
            PeerMachineTests.expectFailed(payee, .localFailure)
        }
    }
}
