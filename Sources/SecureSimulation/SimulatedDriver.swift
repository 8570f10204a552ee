import Foundation
import SecureCore
import SecureCrypto
@_spi(Simulation) import SecurePeer
@_spi(Simulation) import SecureWallet
import SecureStore
import SecureTestSupport
import SecureToken

/// The simulator's peer driver: carries out one machine action per step, as `PeerDriver.performThrowing`
/// does, against the wallet of the end's device. Crash points sit before and after every persisting action.
extension Simulator {
    func act(_ end: SessionEnd, in session: SimulatedSession) throws {
        let action = end.queue.removeFirst()
        let simulated = wallets[end.walletIndex]
        do {
            guard simulated.isUp else { throw SimulatedCrash(point: "an action of a wallet that is down") }
            end.queue += try perform(action, end, simulated, session)
        } catch let crashed as SimulatedCrash {
            self.crash(simulated, "s\(session.number) \(crashed)")
            return
        } catch {
            if let token = error as? TokenError {
                stats.tokenFaults += 1
                note("s\(session.number) \(role(end)) token \(token.code) \(token.returnValueName ?? "")")
            } else {
                note("s\(session.number) \(role(end)) error: \("\(error)".prefix(70))")
            }
            if end.outcome == nil { end.queue += end.mutate(payer: { $0.localFailure() }, payee: { $0.localFailure() }) }
        }
        try settle(end, in: session)
    }

    /// A crash point around a persisting step.
    private func mayCrash(_ point: String) throws {
        if config.faults && !healing && chance(20) { throw SimulatedCrash(point: point) }
    }

    private func perform(_ action: PeerAction, _ end: SessionEnd, _ simulated: SimulatedWallet,
                         _ session: SimulatedSession) throws -> [PeerAction] {
        let wallet = simulated.wallet!
        switch action {
        case .send(let message):
            send(message, from: end, in: session)
            return []
        case .lookUpPeer(let identity):
            end.peerKey = identity.key
            let held = try wallet.ledger.latestPeerCheckpoint(wallet: identity.walletID).flatMap { try? SignedCheckpoint.decode($0.encoded) }
            end.heldPeerCheckpoint = held
            return end.mutate(payer: { $0.peerLookedUp(PeerRecord(heldCheckpoint: held)) },
                              payee: { $0.peerLookedUp(PeerRecord(heldCheckpoint: held)) })
        case .chooseCategory:
            if chance(40) { return end.mutate(payer: { $0.userDeclined() }, payee: { _ in [] }) }
            return end.mutate(payer: { $0.categoryChosen("food") }, payee: { _ in [] })
        case .checkPayment(let amount, let category):
            let check = try PaymentCheck.evaluate(state: wallet.state, amount: amount, category: category,
                                                  time: clock.now + simulated.skewMilliseconds)
            return end.mutate(payer: { $0.paymentChecked(check) }, payee: { _ in [] })
        case .askApproval:
            if chance(50) {
                note("s\(session.number) \(role(end)) declines")
                return end.mutate(payer: { $0.userDeclined() }, payee: { $0.userDeclined() })
            }
            do {
                try simulated.token.unlock(pin: try PIN("1234"), confirmFinalTry: false)
            } catch let error as TokenError {
                stats.tokenFaults += 1
                note("s\(session.number) \(role(end)) PIN refused: \(error.code)")
                return end.mutate(payer: { $0.userDeclined() }, payee: { $0.userDeclined() })
            }
            end.pinHeldUntil = clock.now + Int64(PeerDriver.pinHoldSecondsMax * 1000)
            return end.mutate(payer: { $0.userApproved(overridingBudget: false) }, payee: { $0.userApproved() })
        case .cancelApproval:
            return []
        case .measure(let task):
            var ranging = SimulatedRanging(seed: random.next(), distanceMillimetres: 300 + UInt32(random.next() % 300))
            let summary = try RangingSummary(samples: ranging.samples(count: 16))
            let signed = try task.context.measurement(role: task.role, summary: summary, source: .simulated).sign(with: try simulated.signer())
            var proof: [[UInt8]]?
            if let from = task.consistencyFromSize {
                proof = from >= 1 && from <= end.helloSize ? try wallet.ledger.consistencyProof(oldSize: from, newSize: end.helloSize) : []
            }
            return end.mutate(payer: { $0.measured(signed, consistencyProof: proof) }, payee: { $0.measured(signed) })
        case .persistReadyRecord(let record):
            try mayCrash("before the ready record")
            try wallet.ledger.storeReadyRecord(offerID: record.offerID, record: record.encoded)
            try mayCrash("after the ready record")
            return end.mutate(payer: { _ in [] }, payee: { $0.readyPersisted() })
        case .commitDebit(let task):
            return try commitDebit(task, end, simulated, session)
        case .loadReadyRecord(let offerID):
            let record = try wallet.ledger.readyRecord(offerID: offerID).flatMap { try ReadyRecord.decode($0) }
            return end.mutate(payer: { _ in [] }, payee: { $0.readyRecordLoaded(record) })
        case .credit(let task):
            return try credit(task, end, simulated, session)
        case .keepReceipt(let receipt, _):
            try mayCrash("before keeping the receipt")
            try wallet.confirm(receipt, payeeKeys: Set([end.peerKey].compactMap { $0 }))
            return []
        case .appendReversal(let refusal, _):
            try simulated.unlockToken()
            try mayCrash("before the reversal")
            let outcome = try wallet.applyRefusal(refusal, payeeKeys: Set([end.peerKey].compactMap { $0 }))
            note("s\(session.number) \(role(end)) reversal \(outcomeName(outcome))")
            return []
        case .provideEvidence(let digests):
            let wanted = Set(digests)
            for bytes in try wallet.ledger.evidence() where wanted.contains(SHA256.hash(bytes)) {
                if let evidence = try? ForkEvidence.decode(bytes) { send(.evidence(.item(evidence)), from: end, in: session) }
            }
            return []
        case .keepEvidence(let evidence):
            if evidence.verify().isProven { try wallet.ledger.storeEvidence(evidence.encoded) }
            return []
        case .provideKeyEvents(let walletID, let from):
            if walletID == wallet.walletID,
               let page = KeyEventsMessage.page(of: wallet.keyLog.events, walletID: walletID, from: from) {
                send(.keyEvents(page), from: end, in: session)
            }
            return []
        case .keepKeyEvents:
            return []
        case .finish(let outcome):
            stats.outcomes[PeerDriver.name(of: outcome).split(separator: ":").first.map(String.init) ?? "?", default: 0] += 1
            note("s\(session.number) \(role(end)) finished \(PeerDriver.name(of: outcome))")
            return []
        }
    }

    private func commitDebit(_ task: DebitTask, _ end: SessionEnd, _ simulated: SimulatedWallet,
                             _ session: SimulatedSession) throws -> [PeerAction] {
        let wallet = simulated.wallet!
        try mayCrash("before the debit")
        let (_, transfer) = try wallet.commitDebit(order: task.order, draft: task.draft, expectedPosition: task.position,
                                                   message: { PeerMessage.transfer(task.pending($0)).encoded })
        note("s\(session.number) \(role(end)) debit \(task.order.amount)")
        try mayCrash("after the debit, before the transfer is sent")
        if config.broken == .refusalAfterDebit && chance(300) {
            // Planted bug: a check that should have refused before the debit refuses after it.
            return end.mutate(payer: { $0.localFailure() }, payee: { _ in [] })
        }
        return end.mutate(payer: { $0.debitCommitted(transfer) }, payee: { _ in [] })
    }

    /// The planted `debitBeforeReady` bug: the payer debits as soon as the payee accepts the offer, before
    /// any `ready`, with an order that names the session's channel and a made-up proof digest.
    func plantEarlyDebit(_ end: SessionEnd, _ session: SimulatedSession) {
        let simulated = wallets[end.walletIndex]
        guard let wallet = simulated.wallet, session.kind != .retry, end.isPayer else { return }
        do {
            let order = try TransferOrder(transferID: session.transferID, payerWalletID: wallet.walletID, payerKey: wallet.signingKey,
                                          payeeWalletID: wallets[session.payee.walletIndex].walletID, amount: session.amount,
                                          proximity: .spatialProof(digest: random.bytes(32)), channelBinding: session.binding)
            try simulated.unlockToken()
            _ = try wallet.commitDebit(order: order, draft: order.debitDraft(category: "food"), message: nil)
            note("s\(session.number) \(role(end)) planted debit before ready")
        } catch {
            note("s\(session.number) planted debit failed: \(error)")
        }
    }

    private func credit(_ task: CreditTask, _ end: SessionEnd, _ simulated: SimulatedWallet,
                        _ session: SimulatedSession) throws -> [PeerAction] {
        let wallet = simulated.wallet!
        try simulated.unlockToken()
        try mayCrash("before the credit")
        var outcome = try wallet.accept(task.transfer, policy: task.policy, peerFailure: task.peerFailure)
        if config.broken == .nonIdempotentAccept, case .duplicate = outcome {
            // Planted bug: a re-delivered transfer is credited again, under a fresh statement id.
            let order = task.transfer.payload.order
            let statement = try StatementReference(signer: order.payerKey.fingerprint, id: random.bytes(16),
                                                   payloadDigest: SHA256.hash(task.transfer.payload.encoded))
            outcome = .recorded(try wallet.appendDraft(EntryDraft(kind: .paymentIn, amount: order.amount,
                                                                  counterparty: order.payerWalletID, statement: statement,
                                                                  payload: task.transfer.encoded)))
        }
        try mayCrash("after the credit, before the receipt")
        switch outcome {
        case .recorded(let entry), .duplicate(let entry) where entry.kind == .paymentIn:
            let receipt = try wallet.receipt(for: task.transfer, creditPosition: entry.position)
            note("s\(session.number) \(role(end)) credit \(task.transfer.payload.order.amount) \(outcomeName(outcome))")
            return end.mutate(payer: { _ in [] }, payee: { $0.credited(receipt) })
        case .refused(let reason, _, let refusal?):
            note("s\(session.number) \(role(end)) refuses the transfer: \(reason)")
            auditor.transferRefused(task.transfer, by: simulated, reason: "\(reason)")
            return end.mutate(payer: { _ in [] }, payee: { $0.refused(refusal) })
        case .recorded, .duplicate, .conflict, .refused, .policyRefusal, .dropped:
            note("s\(session.number) \(role(end)) not credited: \(outcomeName(outcome))")
            return end.mutate(payer: { _ in [] }, payee: { $0.creditFailed(.transferInvalid) })
        }
    }
}
