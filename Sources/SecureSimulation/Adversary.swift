import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureTestSupport
import SecureToken
@_spi(Simulation) import SecureWallet

/// The dishonest actors of issue 12, run against the honest wallets through the same wallet code `secure
/// accept` and `secure reverse` run (`Wallet.accept(_:policy:)`, `Wallet.applyRefusal(_:payeeLog:)`):
///
/// - the **forger** writes a file transfer that claims an honest wallet's id as its payer, signed with a
///   software key (`SoftwareWallet(seed:claiming:)`), wrapped with the victim's real key-event log or with
///   its own, and hands it to another honest wallet;
/// - the **refusal forger** signs a refusal of an honest payer's pending transfer with a software key or
///   with a third wallet's real key, wrapped with the payee's real log or the signer's own, and hands it
///   to the payer;
/// - the **self-issuer** is a wallet of its own (a software key, its real log) funded by an issuer it made
///   itself, which no honest wallet trusts; it pays an honest wallet by file with a correctly signed
///   transfer of that asset;
/// - the **restorer** is a real wallet outside the honest set: it copies its folder, pays an honest payee by
///   file, restores the copy with its anchor, pads its ledger with deposits (to below, at or past the size
///   the payee holds) and pays the same payee again by file.
///
/// One attack falls due every `period` steps, in turn; it is made at the first step where its targets are
/// free (up, in no session), or given up for the next one when the next falls due. Its choices come from a
/// random source of its own (derived from the seed), so a run replays exactly. The attacks run on the honest wallets without the simulator's faults, as
/// another process between sessions would: they test the checks, not durability. See docs/SIMULATION.md.
final class Adversary {
    /// Steps between two attacks: up to 20 attacks in a seed of 3,000 steps, 10 in one of 1,500.
    static let period = 150
    /// While an attack waits for free targets, it looks again every this many steps.
    static let retryPeriod = 5
    /// The restorer's payments, in minor units.
    static let restorerPaymentMinorUnits: Int64 = 1_000

    var random: SeededRandom
    var attackCount = 0
    /// An attack fell due and waits for its targets to be free.
    var waiting = false
    var restorerCount = 0
    /// The restorers' wallet ids: what they pay honest wallets comes from outside the audited books.
    private var outsiders: Set<WalletID> = []

    func isOutsider(_ walletID: WalletID) -> Bool { outsiders.contains(walletID) }

    init(seed: UInt64) { random = SeededRandom(seed: seed ^ 0x0ad7_e25a_2712_5eed) }

    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
    func chance(_ permille: UInt64) -> Bool { random.next() % 1000 < permille }

    /// Called after every step of the workload: the attack due, in turn forger, refusal forger, restorer,
    /// self-issuer.
    func step(_ simulator: Simulator) throws {
        if simulator.step % Self.period == 0 {
            if waiting {
                simulator.note("adversary: attack \(attackCount % 4) found no free target; the next is due")
                attackCount += 1
            }
            waiting = true
        }
        guard waiting, simulator.step % Self.retryPeriod == 0 else { return }
        let made: Bool
        switch attackCount % 4 {
        case 0: made = try forgeTransfer(simulator)
        case 1: made = try forgeRefusal(simulator)
        case 2: made = try restoreAndPayAgain(simulator)
        default: made = try payWithSelfIssuedMoney(simulator)
        }
        if made {
            waiting = false
            attackCount += 1
        }
    }

    /// Honest wallets another process could open now: up, in no session, unlocked, able to sign.
    func targets(_ simulator: Simulator) -> [SimulatedWallet] {
        simulator.wallets.filter {
            $0.isUp && !$0.busy && $0.isHonest && !$0.isLocked && !simulator.needsRotationResumed($0)
        }
    }

    // MARK: The forger

    private func forgeTransfer(_ simulator: Simulator) throws -> Bool {
        let targets = targets(simulator)
        guard !targets.isEmpty else { return false }
        let target = pick(targets)
        let victim = pick(simulator.wallets.filter { $0 !== target })
        var forger = try SoftwareWallet(seed: random.next(), claiming: victim.walletID)
        let amount = Simulator.euros(1 + Int64(random.next() % 100_000))
        try forger.fundFromNothing(amount, issuer: simulator.issuer.walletID)
        let transfer = try forger.pay(target.walletID, amount: amount)
        let victimLog = simulator.auditor.latestLog(of: victim.walletID)
        let withVictimLog = victimLog != nil && chance(500)
        let envelope = Envelope(transfer, payerLog: withVictimLog ? victimLog! : forger.log)
        simulator.stats.forgedTransfers += 1
        let (answer, credited) = try deliver(
            envelope, transfer, to: target, simulator, planting: simulator.config.broken == .creditsForgedTransfer)
        if credited { simulator.stats.forgedCredited += 1 }
        simulator.note(
            "forger: \(amount) claiming w\(victim.index) to w\(target.index) "
                + "with \(withVictimLog ? "the victim's" : "its own") log: \(answer)")
        return true
    }

    // MARK: The self-issuer

    /// A wallet funds itself from an issuer it made and pays an honest wallet, which never trusted that
    /// issuer: the transfer is validly signed under the payer's real log, so only the asset check stands
    /// between it and a credit (invariant 1: "credit-trusted-asset").
    private func payWithSelfIssuedMoney(_ simulator: Simulator) throws -> Bool {
        let targets = targets(simulator)
        guard !targets.isEmpty else { return false }
        let target = pick(targets)
        var payer = try SoftwareWallet(seed: random.next())
        let ownIssuer = try SoftwareSigner()
        let amount = Simulator.euros(1 + Int64(random.next() % 100_000))
        try payer.deposit(amount, issuer: ownIssuer)
        let transfer = try payer.pay(target.walletID, amount: amount)
        let envelope = Envelope(transfer, payerLog: payer.log)
        simulator.stats.selfIssued += 1
        let (answer, credited) = try deliver(
            envelope, transfer, to: target, simulator, planting: simulator.config.broken == .creditsUntrustedAsset)
        if credited { simulator.stats.selfIssuedCredited += 1 }
        simulator.note("self-issuer: \(order(transfer)) to w\(target.index): \(answer)")
        return true
    }

    private func order(_ transfer: SignedTransfer) -> String { "\(transfer.payload.order.amount)" }

    /// Hands a dishonest transfer file to `target` through the real `accept`, and, in the broken variant
    /// `planting`, appends its credit anyway (for the auditor to catch). Returns what the wallet answered and
    /// whether it credited the transfer.
    private func deliver(
        _ envelope: Envelope, _ transfer: SignedTransfer, to target: SimulatedWallet, _ simulator: Simulator,
        planting: Bool
    ) throws -> (String, Bool) {
        var answer: String
        var credited = false
        do {
            let outcome = try simulator.quietly(target) {
                try $0.accept(envelope, policy: TransferPolicy(acceptsWithoutProximity: true)).1
            }
            if case .recorded = outcome { credited = true }
            answer = simulator.outcomeName(outcome)
        } catch {
            answer = "error " + Simulator.errorName(error)
        }
        if planting {
            let order = transfer.payload.order
            _ = try? simulator.quietly(target) {
                try $0.appendDraft(
                    EntryDraft(
                        kind: .paymentIn, amount: order.amount, counterparty: order.payerWalletID.bytes,
                        statement: transfer.statementReference, payload: transfer.encoded))
            }
            answer += ", planted its credit"
        }
        return (answer, credited)
    }

    // MARK: The refusal forger

    private func forgeRefusal(_ simulator: Simulator) throws -> Bool {
        var candidates: [(payer: SimulatedWallet, transfer: SignedTransfer)] = []
        for payer in targets(simulator) {
            for pending in (try? payer.wallet!.pendingTransfers()) ?? [] {
                candidates.append((payer, pending.transfer))
            }
        }
        guard !candidates.isEmpty else { return false }
        let (payer, transfer) = pick(candidates)
        let payeeID = transfer.payload.order.payeeWalletID
        let reason = pick([RefusalReason.debitMismatch, .wrongRecipient, .inclusionProofInvalid])
        let thirds = targets(simulator).filter { $0 !== payer && $0.walletID != payeeID }
        let refusal: SignedRefusal
        let signerLog: KeyEventLog
        let signerName: String
        if !thirds.isEmpty && chance(500) {
            // A third wallet's real key, in force for its own wallet id, not for the payee's.
            let third = pick(thirds)
            do {
                refusal = try simulator.quietly(third) { wallet in
                    try Refusal(
                        refusing: transfer, payeeKey: wallet.signingKey, keyDate: wallet.keyDate, reason: reason
                    )
                    .sign(with: try wallet.signer)
                }
            } catch {
                simulator.note("refusal forger: w\(third.index) could not sign: \(Simulator.errorName(error))")
                return false
            }
            signerLog = third.wallet!.keyLog
            signerName = "w\(third.index)'s key"
        } else {
            let forger = try SoftwareWallet(seed: random.next())
            refusal = try forger.refusal(of: transfer, reason: reason)
            signerLog = forger.log
            signerName = "a software key"
        }
        let payeeLog = simulator.auditor.latestLog(of: payeeID)
        let withPayeeLog = payeeLog != nil && chance(500)
        simulator.stats.forgedRefusals += 1
        var answer: String
        do {
            let outcome = try simulator.quietly(payer) {
                try $0.applyRefusal(refusal, payeeLog: withPayeeLog ? payeeLog : signerLog)
            }
            if case .recorded = outcome { simulator.stats.forgedReversed += 1 }
            answer = simulator.outcomeName(outcome)
        } catch {
            answer = "error " + Simulator.errorName(error)
        }
        if simulator.config.broken == .reversesOnForgedRefusal {
            let payload = refusal.payload.answer
            let planted = try? simulator.quietly(payer) {
                try $0.appendDraft(
                    EntryDraft(
                        kind: .reversal, amount: payload.amount, counterparty: payload.payeeWalletID.bytes,
                        statement: refusal.statementReference, payload: refusal.encoded))
            }
            answer += planted == nil ? ", planting its reversal failed" : ", planted its reversal"
        }
        simulator.note(
            "refusal forger: w\(payer.index)'s transfer of \(transfer.payload.order.amount) refused with \(signerName) "
                + "and \(withPayeeLog ? "the payee's" : "the signer's") log: \(answer)")
        return true
    }

    // MARK: The restorer

    /// A fresh restorer each time (a payee that caught one keeps its checkpoints apart from the next).
    private func restoreAndPayAgain(_ simulator: Simulator) throws -> Bool {
        let payees = targets(simulator)
        guard !payees.isEmpty else { return false }
        let payee = pick(payees)
        restorerCount += 1
        let restorer = SimulatedWallet(index: 1_000 + restorerCount, directory: simulator.directory)
        let copy = simulator.directory + "/restorer-\(restorerCount)-copy"
        defer {
            restorer.wallet = nil
            try? FileManager.default.removeItem(atPath: restorer.paths.directory)
            try? FileManager.default.removeItem(atPath: copy)
        }
        try restorer.token.unlock(pin: try PIN("1234"), confirmFinalTry: false)
        try restorer.backup.unlock(pin: try PIN("1234"), confirmFinalTry: false)
        let options = Wallet.InitOptions(
            tokenURI: restorer.token.uri, backup: (restorer.backup, restorer.backup.uri), allowFileAnchor: false,
            label: "restorer")
        // Held only by `restorer.wallet`: the restore below closes it (and its folder's lock) first.
        restorer.wallet = try Wallet.create(
            paths: restorer.paths, token: restorer.token, options: options,
            clock: simulator.clockFunction(restorer))
        try restorer.wallet!.trust(issuer: simulator.issuer.card)
        restorer.walletID = restorer.wallet!.walletID
        outsiders.insert(restorer.walletID)
        simulator.auditor.observe(restorer.wallet!.keyLog)
        try fund(restorer, simulator)

        guard let card = payee.wallet.map({ WalletCard(log: $0.keyLog) }) else { return true }
        let amount = Simulator.euros(Self.restorerPaymentMinorUnits)
        func pay() throws -> Envelope {
            try restorer.wallet!.spend(
                to: card, amount: AssetAmount(issuer: simulator.issuer.walletID, money: amount), category: "misc",
                note: "restorer")
        }
        func deliver(_ envelope: Envelope) throws -> StatementOutcome {
            try simulator.quietly(payee) {
                try $0.accept(envelope, policy: TransferPolicy(acceptsWithoutProximity: true)).1
            }
        }
        /// The restorer's checkpoints the payee credited: size → root.
        var held: [UInt64: Digest32] = [:]
        func payAndDeliver(_ what: String) throws -> Bool {
            let envelope = try pay()
            let checkpoint = try envelope.transfer().0.payload.checkpoint.checkpoint
            let outcome: StatementOutcome
            do {
                outcome = try deliver(envelope)
            } catch {
                simulator.note("restorer r\(restorerCount): \(what): error \(Simulator.errorName(error))")
                return false
            }
            simulator.note(
                "restorer r\(restorerCount): \(what) to w\(payee.index) at size \(checkpoint.size): "
                    + simulator.outcomeName(outcome))
            guard case .recorded = outcome else { return false }
            held[checkpoint.size] = checkpoint.root
            return true
        }
        // Half the time a payment before the copy, so the later envelopes carry a claim from a held size.
        if chance(500) { guard try payAndDeliver("a payment before the copy") else { return true } }
        try restorer.takeSnapshot(into: copy)
        let between = Int(random.next() % 3)
        for _ in 0..<between { try fund(restorer, simulator) }
        guard try payAndDeliver("the payment it will roll back") else { return true }

        restorer.wallet = nil
        try restorer.restoreSnapshot(withAnchor: true)
        let restored = try Wallet.open(
            paths: restorer.paths, token: restorer.token, clock: simulator.clockFunction(restorer))
        restorer.wallet = restored
        guard restored.lockReason == nil else {
            throw simulator.failure("restored-payer-refused", "a copy restored with its anchor opened locked")
        }
        // Pads to below, at or past the size the payee holds, then pays the same payee again.
        let padding = Int(random.next() % UInt64(between + 2))
        for _ in 0..<padding { try fund(restorer, simulator) }
        let envelope = try pay()
        let second = try envelope.transfer().0
        let checkpoint = second.payload.checkpoint.checkpoint
        simulator.auditor.restoredPaymentMade(second)
        let evidenceBefore = try payee.wallet!.ledger.evidence().count
        simulator.stats.restorerAttempts += 1
        let outcome: StatementOutcome
        do {
            outcome = try deliver(envelope)
        } catch {
            simulator.stats.restorerRefused += 1
            simulator.note("restorer r\(restorerCount): pays again: error \(Simulator.errorName(error))")
            return true
        }
        if simulator.config.broken == .creditsRestoredPayment {
            let order = second.payload.order
            _ = try? simulator.quietly(payee) {
                try $0.appendDraft(
                    EntryDraft(
                        kind: .paymentIn, amount: order.amount, counterparty: order.payerWalletID.bytes,
                        statement: second.statementReference, payload: second.encoded))
            }
        }
        let evidenceAfter = try payee.wallet!.ledger.evidence().count
        simulator.note(
            "restorer r\(restorerCount): restored, padded by \(padding), pays w\(payee.index) again at size "
                + "\(checkpoint.size): \(simulator.outcomeName(outcome)), evidence \(evidenceBefore) -> \(evidenceAfter)"
        )
        switch outcome {
        case .recorded, .duplicate:
            simulator.stats.restorerCredited += 1
            throw simulator.failure(
                "restored-payer-refused",
                "w\(payee.index) credited a restored payer's second payment by file (checkpoint of "
                    + "\(checkpoint.size) entries; it holds sizes \(held.keys.sorted()))")
        case .refused, .conflict, .policyRefusal, .dropped:
            simulator.stats.restorerRefused += 1
        }
        // What offline checking can prove (docs/PROTOCOL.md, "Envelopes"): the two histories meet at a size
        // both signed, the same size or the start of one of the envelope's claims.
        let claims = envelope.consistency
        let meets =
            held[checkpoint.size].map { $0 != checkpoint.root } == true
            || claims.contains { claim in held[claim.fromSize].map { $0 != claim.fromRoot } == true }
        guard meets else { return true }
        simulator.stats.restorerEvidenceDue += 1
        guard evidenceAfter > evidenceBefore else {
            throw simulator.failure(
                "restored-payer-refused",
                "w\(payee.index) refused a restored payer's second payment at a size it holds, "
                    + "yet kept no fork evidence")
        }
        simulator.stats.restorerEvidence += 1
        return true
    }

    /// Mints a voucher to a restorer and deposits it: money from outside the audited books.
    private func fund(_ restorer: SimulatedWallet, _ simulator: Simulator) throws {
        let voucher = try simulator.issuer.voucher(
            Simulator.euros(Self.restorerPaymentMinorUnits * 2), to: restorer.walletID, id: .random(using: &random))
        guard case .recorded = try restorer.wallet!.deposit(voucher) else {
            throw simulator.failure("deposit", "a restorer's voucher was not deposited")
        }
    }
}

extension Simulator {
    /// Runs `body` on an honest wallet as another process would between its sessions: without the
    /// simulator's faults, and so without drawing from the workload's random source.
    func quietly<T>(_ simulated: SimulatedWallet, _ body: (Wallet) throws -> T) throws -> T {
        guard let wallet = simulated.wallet else { throw SimulatedCrash(point: "a wallet that is down") }
        let plan = simulated.token.faultPlan
        let hooks = wallet.faultHooks
        simulated.token.faultPlan = nil
        var quiet = hooks
        quiet?.beforeCommit = nil
        quiet?.afterCommit = nil
        wallet.faultHooks = quiet
        defer {
            simulated.token.lock()
            simulated.token.faultPlan = plan
            wallet.faultHooks = hooks
        }
        try simulated.unlockToken()
        return try body(wallet)
    }

    /// An error's kind, without its text (which may name random bytes and would change the trace).
    static func errorName(_ error: Error) -> String {
        if let error = error as? WalletError { return "\(error.code)" }
        if let error = error as? TokenError { return "token \(error.code)" }
        return String(describing: type(of: error))
    }
}
