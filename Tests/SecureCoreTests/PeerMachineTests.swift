import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

@Suite("Peer state machines")
struct PeerMachineTests {
    static let paid = Fixture.eur(10_000 - 450)

    static func expectPaid(_ sim: PeerSimulation, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .paid(let receipt)? = sim.payerMachine.outcome, case .received? = sim.payeeMachine.outcome else {
            let outcomes =
                "payer \(String(describing: sim.payerMachine.outcome)), payee \(String(describing: sim.payeeMachine.outcome))"
            Issue.record("not paid: \(outcomes); \(sim.protocolErrors)", sourceLocation: sourceLocation)
            return
        }
        #expect(sim.payerBalance == paid && sim.payeeBalance == Fixture.eur(450), sourceLocation: sourceLocation)
        #expect(sim.receipt == receipt, sourceLocation: sourceLocation)
    }

    /// The side that ended first with a failure, and that no money moved.
    static func expectFailed(
        _ sim: PeerSimulation, _ reason: PeerFailureReason,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let outcomes = [sim.payerMachine.outcome, sim.payeeMachine.outcome]
        #expect(
            outcomes.contains { $0 == .failed(reason, byPeer: false) },
            "expected \(reason): \(outcomes); \(sim.protocolErrors)", sourceLocation: sourceLocation)
        #expect(
            sim.payerBalance == PeerSimulation.total && sim.payeeBalance.isZero && sim.pending == nil,
            sourceLocation: sourceLocation)
    }

    @Test("pay flow: both sides run to a receipt; a second payment proves consistency from the held checkpoint")
    func payFlow() throws {
        var sim = try PeerSimulation()
        try sim.run()
        PeerMachineTests.expectPaid(sim)
        #expect(sim.approvals.map(\.role) == [.payer, .payee] && sim.approvals.allSatisfy(\.needsConfirmation))
        #expect(sim.approvals[0].check == .ok && sim.approvals[0].knownName == "Bob")
        #expect(
            sim.sent.map(\.name) == [
                "hello", "hello", "offer", "reply", "measurement", "measurement", "ready",
                "transfer", "receipt",
            ])
        #expect(sim.held != nil && sim.payerMachine.wait == nil && sim.payeeMachine.wait == nil)
        // The payee now holds a checkpoint of the payer; the next payment carries a consistency proof.
        try sim.payer.deposit(1, issuer: SoftwareSigner())
        try sim.newSession(retrying: nil)
        try sim.run()
        guard case .paid? = sim.payerMachine.outcome else { Issue.record("\(sim.protocolErrors)"); return }
        #expect(sim.payeeBalance == Fixture.eur(900))
    }

    @Test("request flow: the requester skips its prompt only for the exact answer to its request")
    func requestFlow() throws {
        var config = PeerSimulation.Config()
        config.request = "Coffee"
        var sim = try PeerSimulation(config)
        try sim.run()
        PeerMachineTests.expectPaid(sim)
        #expect(sim.sent.map(\.name).prefix(4) == ["hello", "hello", "request", "offer"])
        #expect(sim.approvals.map(\.needsConfirmation) == [true, false])
        #expect(sim.approvals[0].note == "Coffee")

        // An offer under another id than the request's is asked about.
        var other = try PeerSimulation(config)
        other.tamper = { toPayee, message in
            guard toPayee, case .offer(let offer) = message else { return message }
            return .offer(try! PaymentOffer(offerID: Fixture.id(0xEE), amount: offer.amount))
        }
        try other.run()
        #expect(other.approvals.map(\.needsConfirmation) == [true, true])
    }

    @Test("refusals before the debit: distance, disagreement, samples, simulated, budget, balance, amount")
    func refusalsBeforeDebit() throws {
        func run(_ change: (inout PeerSimulation.Config) -> Void, seed: UInt64 = 1) throws -> PeerSimulation {
            var config = PeerSimulation.Config()
            change(&config)
            var sim = try PeerSimulation(config, seed: seed)
            try sim.run()
            return sim
        }
        PeerMachineTests.expectFailed(
            try run {
                $0.payerDistance = 1400; $0.payeeDistance = 1450
            }, .tooFar)
        PeerMachineTests.expectFailed(
            try run {
                $0.payerDistance = 200; $0.payeeDistance = 800
            }, .distancesDisagree)
        PeerMachineTests.expectFailed(try run { $0.payeeSampleCount = 5 }, .rangingFailed)
        PeerMachineTests.expectFailed(try run { $0.payeeSource = .simulated }, .simulatedRangingRefused)
        PeerMachineTests.expectPaid(
            try run {
                $0.payeeSource = .simulated; $0.payerSource = .simulated; $0.allowsSimulated = true
            })
        PeerMachineTests.expectFailed(try run { $0.amount = 10_001 }, .insufficientFunds)
        PeerMachineTests.expectFailed(try run { $0.payeeApproves = false }, .declined)

        // Over budget: refused without an override, paid and marked with one; a hard cap refuses.
        for (hardCap, override, expected) in [
            (false, false, "refused"), (false, true, "paid"), (true, true, "refused"),
        ] {
            var config = PeerSimulation.Config()
            config.category = "food"
            config.overrideBudget = override
            var sim = try PeerSimulation(config)
            let budget = try Budget(
                category: "food", limit: Fixture.eur(100), window: .month, isHardCap: hardCap,
                timeZoneIdentifier: "UTC")
            try sim.payer.append(
                EntryDraft(
                    kind: .budgetChange, amount: nil, category: "food", statement: nil,
                    payload: BudgetChange.set(budget).payload))
            try sim.newSession(retrying: nil)
            try sim.run()
            if expected == "paid" {
                PeerMachineTests.expectPaid(sim)
                #expect(sim.payer.entries.last!.flags.contains(.budgetOverride))
            } else {
                PeerMachineTests.expectFailed(sim, .overBudget)
            }
        }

        // The payee's ready names another amount.
        var mismatched = try PeerSimulation()
        mismatched.tamper = { toPayee, message in
            guard !toPayee, case .ready(let ready) = message else { return message }
            let amount = AssetAmount(issuer: ready.amount.issuer, money: Fixture.eur(449))
            return .ready(ReadyMessage(offerID: ready.offerID, amount: amount))
        }
        try mismatched.run()
        PeerMachineTests.expectFailed(mismatched, .amountMismatch)

        // The payee's ready names the same money of another issuer: another asset, so another amount.
        var otherAsset = try PeerSimulation()
        otherAsset.tamper = { toPayee, message in
            guard !toPayee, case .ready(let ready) = message else { return message }
            return .ready(ReadyMessage(offerID: ready.offerID, amount: Fixture.asset(450)))
        }
        try otherAsset.run()
        PeerMachineTests.expectFailed(otherAsset, .amountMismatch)
    }

    @Test("an offer of an asset whose issuer the payee does not trust is refused before anything is debited")
    func untrustedAsset() throws {
        var config = PeerSimulation.Config()
        config.payeeTrustsIssuer = false
        var sim = try PeerSimulation(config)
        try sim.run()
        PeerMachineTests.expectFailed(sim, .untrustedAsset)
        #expect(sim.approvals.map(\.role) == [.payer], "the payee is never asked")
        #expect(!sim.sent.contains { $0.name == "ready" || $0.name == "transfer" })
    }

    @Test("measurements replayed from an older nonce or with the keys swapped are refused before the debit")
    func badMeasurements() throws {
        // Capture a genuine payee measurement from one session, and replay it in the next.
        var first = try PeerSimulation()
        try first.run()
        let old = first.sent.compactMap { message -> MeasurementMessage? in
            if case .measurement(let m) = message, m.measurement.payload.signerRole == .payee { return m }
            return nil
        }[0]
        var replay = try PeerSimulation(seed: 1)
        replay.tamper = { toPayee, message in
            guard !toPayee, case .measurement(let m) = message else { return message }
            return .measurement(
                try! MeasurementMessage(offerID: m.offerID, measurement: old.measurement, consistencyProof: nil))
        }
        try replay.run()
        PeerMachineTests.expectFailed(replay, .measurementInvalid)

        var swapped = try PeerSimulation(seed: 2)
        let payeeSigner = swapped.payee.signer
        swapped.tamper = { toPayee, message in
            guard !toPayee, case .measurement(let m) = message else { return message }
            let p = m.measurement.payload
            let context = MeasurementContext(
                nonce: p.nonce, offerID: p.offerID, payerKey: p.payeeKey, payeeKey: p.payerKey,
                payerDate: p.keyDate, payeeDate: p.keyDate, channelBinding: p.channelBinding)
            let forged = try! context.measurement(role: .payer, summary: p.summary, source: p.source).sign(
                with: payeeSigner)
            return .measurement(try! MeasurementMessage(offerID: m.offerID, measurement: forged, consistencyProof: nil))
        }
        try swapped.run()
        PeerMachineTests.expectFailed(swapped, .measurementInvalid)
    }

    @Test("a tampered transfer is dropped; the payer is unconfirmed; retry in a new session pays exactly once")
    func tamperedTransferThenRetry() throws {
        var sim = try PeerSimulation()
        sim.tamper = { toPayee, message in
            guard toPayee, case .transfer(let t) = message else { return message }
            let forged = SignedTransfer(payload: t.transfer.payload, signature: t.spatialProof.payer.signature)
            return .transfer(TransferMessage(offerID: t.offerID, transfer: forged, spatialProof: t.spatialProof))
        }
        try sim.run()
        #expect(sim.payerMachine.outcome == .unconfirmed(transferID: sim.pending!.transfer.payload.order.transferID))
        #expect(sim.payeeMachine.outcome == .failed(.transferInvalid, byPeer: false))
        sim.expectConserved("tampered")
        sim.tamper = { $1 }
        try sim.newSession(retrying: sim.pending)
        try sim.run()
        PeerMachineTests.expectPaid(sim)
    }

    @Test("a transfer that does not match the ready record is refused with a signed refusal; the payer reverses")
    func refusedAfterDebit() throws {
        var sim = try PeerSimulation()
        // The payee's stored record is corrupted to name another amount: the transfer no longer matches.
        sim.tamper = { toPayee, message in message }
        var done = false
        sim.pauseAfter = 7 // after ready reaches the payer: the payee's record is stored
        try sim.run()
        for (id, record) in sim.readyRecords where !done {
            sim.readyRecords[id] = ReadyRecord(
                offerID: record.offerID, nonce: record.nonce,
                amount: AssetAmount(issuer: record.amount.issuer, money: Fixture.eur(1)),
                payerWalletID: record.payerWalletID,
                payerKey: record.payerKey, payerCheckpoint: record.payerCheckpoint,
                payerMeasurement: record.payerMeasurement, payeeMeasurement: record.payeeMeasurement)
            done = true
        }
        // The transfer is in flight; the link drops, and the retry meets the stored record.
        sim.cut()
        #expect(sim.payerMachine.outcome == .unconfirmed(transferID: sim.pending!.transfer.payload.order.transferID))
        try sim.newSession(retrying: sim.pending)
        try sim.run()
        #expect(sim.payerMachine.outcome == .reversed(.readyRecordMismatch))
        #expect(sim.payeeMachine.outcome == .refusedTransfer(.readyRecordMismatch))
        #expect(sim.payerBalance == PeerSimulation.total && sim.payeeBalance.isZero)
        #expect(sim.payer.entries.last!.kind == .reversal && sim.payee.entries.last!.kind == .statementRefused)
    }

    @Test("the link dropped after every message: never lost; unconfirmed payments retry to exactly one credit")
    func linkDroppedEverywhere() throws {
        var reference = try PeerSimulation()
        try reference.run()
        let messageCount = reference.sent.count
        for cut in 1...messageCount {
            var sim = try PeerSimulation()
            sim.cutAfter = cut
            try sim.run()
            sim.expectConserved("cut after \(cut)")
            switch sim.payerMachine.outcome {
            case .unconfirmed?:
                try sim.newSession(retrying: sim.pending)
                try sim.run()
                PeerMachineTests.expectPaid(sim)
                // A second retry is answered with the same credit, not a second one.
                try sim.newSession(retrying: sim.pending)
                try sim.run()
                PeerMachineTests.expectPaid(sim)
            case .paid?: PeerMachineTests.expectPaid(sim)
            case .failed?: #expect(sim.payerBalance == PeerSimulation.total && sim.payeeBalance.isZero, "cut \(cut)")
            case .reversed?, .received?, .refusedTransfer?, nil:
                Issue.record("cut \(cut): \(String(describing: sim.payerMachine.outcome))")
            }
        }
    }

    @Test("a withdrawn request, and a decision racing a withdrawal, are settled once")
    func withdrawals() throws {
        var config = PeerSimulation.Config()
        config.request = "Coffee"
        var sim = try PeerSimulation(config)
        sim.pauseAfter = 2 // both hellos are in; the request is on its way
        try sim.run()
        try sim.payeeDo(sim.payeeMachine.withdraw())
        #expect(sim.payeeMachine.outcome == .failed(.withdrawn, byPeer: false))
        #expect(sim.payeeMachine.userApproved() == [] && sim.payeeMachine.withdraw() == [])
        sim.pauseAfter = nil
        try sim.pump()
        #expect(sim.payerMachine.outcome == .failed(.withdrawn, byPeer: true), "\(sim.protocolErrors)")
        #expect(sim.payerBalance == PeerSimulation.total && sim.payeeBalance.isZero)

        // The payer withdraws while the payee is deciding: the payee's late approval sends nothing.
        var race = try PeerSimulation()
        race.config.payeeDefersApproval = true
        race.pauseAfter = 3 // both hellos and the offer are in: the payee's prompt is open
        try race.run()
        #expect(race.approvals.map(\.role) == [.payer, .payee])
        try race.payerDo(race.payerMachine.userDeclined())
        #expect(race.payerMachine.outcome == .failed(.withdrawn, byPeer: false))
        race.pauseAfter = nil
        try race.pump()
        #expect(race.payeeMachine.outcome == .failed(.withdrawn, byPeer: true))
        #expect(race.payeeMachine.userApproved() == [] && race.payeeMachine.userDeclined() == [])
        #expect(!race.sent.contains { $0.name == "reply" })
        #expect(race.payerBalance == PeerSimulation.total && race.payeeBalance.isZero)
    }

    @Test("a payer behind the checkpoint its payee holds is refused before any debit; a fork is kept as evidence")
    func rolledBackPayer() throws {
        var sim = try PeerSimulation()
        let before = sim.payer
        try sim.run()
        PeerMachineTests.expectPaid(sim)
        // The payer restores an old copy of its ledger: its hello is behind what the payee holds.
        var restored = try PeerSimulation(seed: 5)
        restored.payer = before
        restored.held = sim.held
        try restored.newSession(retrying: nil)
        try restored.run()
        PeerMachineTests.expectFailed(restored, .checkpointInconsistent)
        #expect(restored.keptEvidence.isEmpty)

        // The old copy spends elsewhere to the same size: two signed histories of one size are a fork.
        var forked = try PeerSimulation(seed: 6)
        forked.payer = before
        try forked.payer.deposit(1, issuer: SoftwareSigner())
        forked.held = sim.held
        try forked.newSession(retrying: nil)
        try forked.run()
        #expect(forked.payeeMachine.outcome == .failed(.checkpointInconsistent, byPeer: false))
        #expect(forked.keptEvidence.count == 1 && forked.keptEvidence.allSatisfy { $0.verify().isProven })
        #expect(forked.payerBalance == Fixture.eur(10_001) && forked.payeeBalance.isZero && forked.pending == nil)
    }

    @Test("every message injected at every stage, into either side: never a trap, money always conserved")
    func injection() throws {
        var reference = try PeerSimulation()
        try reference.run()
        let injections = reference.sent + (try PeerMessageTests.samples())
        for stage in 0...reference.sent.count {
            for toPayee in [true, false] {
                for (index, message) in injections.enumerated() {
                    var sim = try PeerSimulation()
                    sim.pauseAfter = stage
                    try sim.run()
                    try sim.deliver(message, toPayee: toPayee)
                    sim.pauseAfter = nil
                    try sim.pump()
                    sim.expectConserved("stage \(stage), \(toPayee ? "payee" : "payer") gets #\(index) \(message.name)")
                    if case .unconfirmed? = sim.payerMachine.outcome {
                        try sim.newSession(retrying: sim.pending)
                        try sim.run()
                        sim.expectConserved("retry after stage \(stage) #\(index)")
                        #expect(
                            sim.payerMachine.outcome.map { if case .unconfirmed = $0 { false } else { true } } ?? false)
                    }
                }
            }
        }
    }
}
