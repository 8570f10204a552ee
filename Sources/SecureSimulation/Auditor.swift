import Foundation
import SecureCore
import SecureCrypto
@_spi(Simulation) import SecurePeer
import SecureStore
@_spi(Simulation) import SecureWallet

/// The independent model the simulator checks after every step. It reads the wallets' ledgers entry by
/// entry and keeps its own books (balances, and every transfer id's debits, credits and reversals); it
/// never asks the wallet whether the wallet is right, except to compare the wallet's balance with its own.
final class Auditor {
    /// What the auditor keeps of one entry.
    struct Seen {
        let kind: EntryKind
        let minorUnits: Int64
        let transferID: StatementID?
        /// A peer-protocol debit (it carries a spatial proof), as opposed to a file transfer.
        let isPeerDebit: Bool
        let payerWalletID: WalletID?
        /// The entry's time, for the offline-limit window.
        let time: Int64
    }

    struct TransferBooks {
        var debits = 0
        var credits = 0
        var reversals = 0
        var minorUnits: Int64 = 0
        var isPeer = false
        var payerWalletID: WalletID?
        var payeeWalletID: WalletID?
    }

    unowned let simulator: Simulator
    private var seen: [[Seen]]
    private var balances: [Int64]
    private var transfers: [StatementID: TransferBooks] = [:]
    /// Deposits seen by voucher id: a voucher is deposited at most once.
    private var deposits: [StatementID: Int] = [:]
    /// Every voucher the issuer minted, by id, and their sum: conservation starts from these, not from the
    /// deposits the ledgers recorded, so a lost or mis-recorded deposit shows.
    private var minted: [StatementID: Int64] = [:]
    private var mintedTotal: Int64 = 0
    /// Minted vouchers that no ledger holds a deposit of (still with their wallet, or forgotten by a restore).
    private var undeposited: Int64 = 0
    /// Vouchers whose deposit the wallet reported done in this step; the ledger must show them.
    private var depositsReported: [(voucherID: StatementID, wallet: Int)] = []
    /// Every key each wallet id ever put in force, by key sequence (a wallet restored with its anchor may
    /// put two keys in force at one sequence): the truth the signer checks compare with.
    private var keysInForce: [WalletID: [UInt64: Set<P256.PublicKey>]] = [:]
    /// The restorers' second payments (Adversary): no honest wallet may ever credit one.
    private var restoredPayments: Set<StatementID> = []
    /// Each wallet id's latest key-event log as the simulator knows it (an honest wallet's only grows).
    private var latestLogs: [WalletID: KeyEventLog] = [:]
    /// Per honest payee and payer: what each credit showed of the payer's ledger, for the double-spend check.
    private var creditsSeen: [Int: [WalletID: [CreditSeen]]] = [:]

    struct CreditSeen {
        let transferID: StatementID
        let debitPosition: UInt64?
        let checkpointSize: UInt64
        let checkpointRoot: Digest32
        let checkpointHead: Digest32
        /// The key that signed the payer's checkpoint: evidence across a rotation needs the payer's key-event
        /// log, which today's rules do not use (issue 12 extends them).
        let checkpointKey: Digest32
    }

    init(simulator: Simulator) {
        self.simulator = simulator
        seen = Array(repeating: [], count: simulator.wallets.count)
        balances = Array(repeating: 0, count: simulator.wallets.count)
    }

    private func fail(_ invariant: String, _ detail: String) -> SimulationFailure {
        simulator.failure(invariant, detail)
    }

    // MARK: After every step

    /// A violation seen in the middle of a step (where nothing can throw), raised after it.
    var violation: SimulationFailure?

    func checkAfterStep() throws {
        if let violation { throw violation }
        // Every wallet's key-event log first: a credit is checked against its payer's keys as they stand.
        for simulated in simulator.wallets {
            guard let wallet = simulated.wallet else { continue }
            let log = wallet.keyLog, known = latestLogs[simulated.walletID]
            if known?.events.count != log.events.count || known?.events.last != log.events.last { observe(log) }
        }
        for simulated in simulator.wallets {
            guard let wallet = simulated.wallet else { continue }
            try scan(simulated, wallet)
            let balance = wallet.state.minorUnitsHeld(.eur)
            guard balance >= 0, balances[simulated.index] >= 0 else {
                throw fail("no-negative-balance", "w\(simulated.index) has \(balance)")
            }
            guard balance == balances[simulated.index] else {
                throw fail(
                    "ledger-state",
                    "w\(simulated.index) reports \(balance) but its entries add up to \(balances[simulated.index])")
            }
            try checkAnchor(simulated)
        }
        for (voucherID, index) in depositsReported where deposits[voucherID, default: 0] == 0 {
            throw fail(
                "deposit-recorded",
                "w\(index) reported the deposit of voucher \(Hex.encode(voucherID.bytes.prefix(6))) done, "
                    + "but its ledger holds no deposit of it")
        }
        depositsReported = []
        try checkConservation()
    }

    /// Learns a key-event log: every key it puts in force, and the log itself as the wallet id's latest.
    func observe(_ log: KeyEventLog) {
        for signed in log.events {
            keysInForce[log.walletID, default: [:]][signed.event.sequence, default: []].insert(signed.event.signingKey)
        }
        if log.events.count >= latestLogs[log.walletID]?.events.count ?? 0 { latestLogs[log.walletID] = log }
    }

    /// A restored payer's second payment to the same payee: invariant 3 of issue 12 forbids its credit.
    func restoredPaymentMade(_ transfer: SignedTransfer) {
        restoredPayments.insert(StatementID(transfer.payload.order.transferID))
    }

    /// A wallet id's latest key-event log as the simulator knows it (the forgers wrap their files with it).
    func latestLog(of walletID: WalletID) -> KeyEventLog? { latestLogs[walletID] }

    /// Invariant 1 of issue 12: an honest wallet credits only a transfer signed by a key the payer's wallet
    /// id put in force, at the sequence the transfer's checkpoint names (checked against the payer's own
    /// key-event logs, never the payee's view of them).
    private func checkCreditSigner(_ transfer: SignedTransfer, payee: Int) throws {
        guard simulator.wallets[payee].isHonest else { return }
        let order = transfer.payload.order
        let checkpoint = transfer.payload.checkpoint.checkpoint
        let keys = keysInForce[order.payerWalletID]?[checkpoint.keySequence] ?? []
        guard transfer.isSignatureValid, order.payerKey == checkpoint.walletKey,
            checkpoint.walletID == order.payerWalletID, keys.contains(order.payerKey)
        else {
            throw fail(
                "credit-signed-by-payer",
                "w\(payee) credited \(order.amount) claiming payer \(Hex.encode(order.payerWalletID.bytes.prefix(6))), "
                    + "signed by a key that wallet id never put in force at sequence \(checkpoint.keySequence)")
        }
    }

    /// Invariant 1 of issue 12, last part: an honest wallet never credits one payer more than its offline limit
    /// (`Simulator.offlineLimit`, set by every wallet at setup) within the limit's rolling window, counted
    /// from the credits this auditor saw committed, not from the wallet's own tally.
    private func checkOfflineLimit(_ entry: LedgerEntry, payer: WalletID, payee simulated: SimulatedWallet) throws {
        guard simulated.isHonest else { return }
        let limit = simulator.offlineLimit
        let start = entry.time - limit.window.milliseconds
        // `seen` already holds this entry, last.
        var total: Int64 = 0
        for earlier in seen[simulated.index].reversed() {
            guard earlier.time > start else { break }
            if earlier.kind == .paymentIn, earlier.payerWalletID == payer { total += earlier.minorUnits }
        }
        guard total <= limit.amount.minorUnits else {
            throw fail(
                "offline-limit",
                "w\(simulated.index) credited \(total) minor units from payer \(Hex.encode(payer.bytes.prefix(6))) "
                    + "within a \(limit.window), over its limit of \(limit.amount)")
        }
    }

    /// Invariant 2 of issue 12: an honest wallet reverses a payment only with a refusal signed by the payee
    /// the transfer names, with a key that payee's wallet id put in force at the refusal's key sequence.
    private func checkReversalSigner(_ entry: LedgerEntry, payer: Int) throws {
        guard simulator.wallets[payer].isHonest else { return }
        guard let refusal = (try? SignedRefusal.decode(entry.payload)) ?? nil, refusal.isSignatureValid else {
            throw fail("reversal-signed-by-payee", "w\(payer) reversed a payment without a signed refusal")
        }
        let answer = refusal.payload.answer
        let payee = transfers[StatementID(answer.transferID)]?.payeeWalletID
        let keys = keysInForce[answer.payeeWalletID]?[answer.keyDate.keySequence] ?? []
        guard payee == nil || payee == answer.payeeWalletID, keys.contains(answer.payeeKey) else {
            throw fail(
                "reversal-signed-by-payee",
                "w\(payer) reversed transfer \(Hex.encode(answer.transferID.bytes.prefix(6))) on a refusal not "
                    + "signed by its payee's key in force")
        }
    }

    /// Reads the entries added since the last look.
    private func scan(_ simulated: SimulatedWallet, _ wallet: Wallet) throws {
        let index = simulated.index
        let known = UInt64(seen[index].count)
        guard wallet.size >= known else {
            throw fail("durability", "w\(index) has \(wallet.size) entries but \(known) were seen committed")
        }
        guard wallet.size > known else { return }
        var added: [LedgerEntry] = []
        try wallet.ledger.forEachEntry(from: known, to: wallet.size) { added.append($0) }
        for entry in added { try record(entry, in: simulated) }
    }

    private func record(_ entry: LedgerEntry, in simulated: SimulatedWallet) throws {
        let index = simulated.index
        let units = entry.amount?.money.minorUnits ?? 0
        var transferID: StatementID?
        var isPeerDebit = false
        var payer: WalletID?
        switch entry.kind {
        case .paymentOut:
            guard let order = try TransferOrder.decode(entry.payload) else {
                throw fail("ledger", "an undecodable debit")
            }
            transferID = StatementID(order.transferID)
            payer = order.payerWalletID
            if case .spatialProof = order.proximity { isPeerDebit = true }
            try checkReadyBeforeDebit(order, simulated)
            var books = transfers[StatementID(order.transferID), default: TransferBooks()]
            books.debits += 1
            books.minorUnits = order.amount.money.minorUnits
            books.isPeer = isPeerDebit
            books.payerWalletID = order.payerWalletID
            books.payeeWalletID = order.payeeWalletID
            transfers[StatementID(order.transferID)] = books
            balances[index] -= units
        case .paymentIn:
            // The transfer id from the signed transfer itself, not from the entry's statement reference.
            let transfer = try SignedTransfer.decode(entry.payload)
            transferID = transfer.map { StatementID($0.payload.order.transferID) } ?? entry.statement?.id
            payer = transfer?.payload.order.payerWalletID
            var books = transfers[transferID!, default: TransferBooks()]
            books.credits += 1
            if let order = transfer?.payload.order {
                // Invariant 1: an honest wallet credits only an asset whose issuer it trusts (the one issuer).
                if let trusted = trustedIssuer, order.amount.issuer != trusted {
                    throw fail(
                        "credit-trusted-asset",
                        "w\(index) credited \(order.amount), an asset of an issuer it never trusted")
                }
                books.minorUnits = order.amount.money.minorUnits
                books.payerWalletID = order.payerWalletID
                books.payeeWalletID = order.payeeWalletID
            }
            transfers[transferID!] = books
            balances[index] += units
            if let transfer {
                try checkDoubleSpend(transfer, payee: simulated)
                try checkCreditSigner(transfer, payee: index)
                if simulated.isHonest, restoredPayments.contains(transferID!) {
                    throw fail(
                        "restored-payer-refused",
                        "w\(index) credited a restored payer's second payment to it by file")
                }
            } else if simulated.isHonest {
                throw fail("credit-signed-by-payer", "w\(index) credited an entry that holds no signed transfer")
            }
        case .reversal:
            transferID = entry.statement?.id
            transfers[transferID!, default: TransferBooks()].reversals += 1
            balances[index] += units
            try checkReversalSigner(entry, payer: index)
        case .deposit:
            transferID = entry.statement?.id // the voucher id, kept so a restore can forget the deposit
            guard let id = entry.statement?.id, let amount = minted[id] else {
                throw fail(
                    "deposit-minted", "w\(index) recorded a deposit of \(units) for a voucher the issuer never minted")
            }
            guard amount == units else {
                throw fail(
                    "deposit-minted",
                    "w\(index) recorded \(units) for voucher \(Hex.encode(id.bytes.prefix(6))) minted for \(amount)")
            }
            deposits[id, default: 0] += 1
            if deposits[id] == 1 { undeposited -= amount }
            balances[index] += units
        case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .confirmation,
            .settings:
            break
        case .mint, .redemption:
            throw fail("issuer-entries", "w\(index), an ordinary wallet, recorded a \(entry.kind) entry")
        }
        seen[index].append(
            Seen(
                kind: entry.kind, minorUnits: units, transferID: transferID, isPeerDebit: isPeerDebit,
                payerWalletID: payer, time: entry.time))
        if let transferID, let books = transfers[transferID] {
            guard books.debits <= 1, books.credits <= 1, books.reversals <= 1 else {
                throw fail(
                    "transfer-at-most-once",
                    "transfer \(Hex.encode(transferID.bytes.prefix(6))) has \(books.debits) debits, "
                        + "\(books.credits) credits and \(books.reversals) reversals")
            }
            guard books.credits == 0 || books.reversals == 0 else {
                throw fail(
                    "refusal-zero-debit",
                    "transfer \(Hex.encode(transferID.bytes.prefix(6))) was both credited and reversed")
            }
        }
        // After the at-most-once checks, so a double credit is reported as what it is.
        if entry.kind == .paymentIn, let payer {
            try checkOfflineLimit(entry, payer: payer, payee: simulated)
        }
        if entry.kind == .deposit, let id = entry.statement?.id, deposits[id]! > 1 {
            throw fail("deposit-at-most-once", "voucher \(Hex.encode(id.bytes.prefix(6))) deposited twice")
        }
    }

    /// A peer debit needs a `ready` for exactly its amount, received in the session whose channel it names.
    private func checkReadyBeforeDebit(_ order: TransferOrder, _ simulated: SimulatedWallet) throws {
        guard case .spatialProof = order.proximity else { return } // `spend --out` file transfers are exempt
        // Kept beyond the session: a crash between the commit and this look ends the session first.
        guard
            readies.contains(where: {
                $0.wallet == simulated.index && $0.binding == order.channelBinding && $0.amount == order.amount
            })
        else {
            throw fail(
                "ready-before-debit",
                "w\(simulated.index) debited \(order.amount) for transfer "
                    + "\(Hex.encode(order.transferID.bytes.prefix(6))) without a ready for that amount on its channel")
        }
    }

    private func checkAnchor(_ simulated: SimulatedWallet) throws {
        guard let size = simulated.anchoredSize() else { return }
        guard size >= simulated.anchorSizeSeen else {
            throw fail(
                "anchor-monotonic",
                "w\(simulated.index)'s anchor moved back from \(simulated.anchorSizeSeen) to \(size)")
        }
        simulated.anchorSizeSeen = size
    }

    /// Money among all wallets: balances plus unconfirmed transfers plus minted vouchers no ledger holds
    /// equal what the issuer minted, except for credits whose debit vanished with a restore, which must all
    /// trace to restored wallets.
    private func checkConservation() throws {
        let total = balances.reduce(0, +)
        var inFlight: Int64 = 0
        var orphaned: Int64 = 0
        var fromOutside: Int64 = 0
        for books in transfers.values {
            if books.debits == 1 && books.credits == 0 && books.reversals == 0 { inFlight += books.minorUnits }
            if books.debits == 0 && books.credits > 0, let payer = books.payerWalletID,
                simulator.adversary.isOutsider(payer)
            {
                // A restorer's payment (Adversary): its debit is in a ledger outside the audited books.
                fromOutside += books.minorUnits
                continue
            }
            if books.debits == 0 && (books.credits + books.reversals) > 0 {
                guard let payer = simulator.wallets.first(where: { $0.walletID == books.payerWalletID }),
                    !payer.isHonest
                else {
                    throw fail("conservation", "a credit of \(books.minorUnits) has no debit, and its payer is honest")
                }
                orphaned += books.minorUnits
            }
        }
        guard total + inFlight + undeposited == mintedTotal + orphaned + fromOutside else {
            throw fail(
                "conservation",
                "balances \(total) + in flight \(inFlight) + undeposited vouchers \(undeposited) "
                    + "!= minted \(mintedTotal) + traced excess \(orphaned) + restorers' payments \(fromOutside)")
        }
        simulator.stats.excessTraced = orphaned
    }

    // MARK: Events

    /// A wallet process started again.
    func checkOpened(_ simulated: SimulatedWallet) throws {
        guard let wallet = simulated.wallet else { return }
        if simulated.restoredDatabaseOnly {
            // The anchor catches an old copy only if it moved past it; a token fault can leave it behind
            // (`anchorLag`), and then the copy is indistinguishable from the wallet as the anchor knows it.
            guard wallet.lockReason != nil || !simulated.anchorAheadOfRestore else {
                throw fail("restored-caught", "w\(simulated.index) opened an old copy of its database without locking")
            }
            simulator.stats.lockedByRestore += 1
        } else if let reason = wallet.lockReason, simulated.isHonest {
            throw fail("honest-wallet-opens", "w\(simulated.index) was only crashed, yet opened locked: \(reason)")
        }
    }

    /// A wallet was restored from its old copy: forget what the auditor saw beyond it.
    func walletRestored(_ simulated: SimulatedWallet) {
        let size = Int(simulated.snapshot!.size)
        let index = simulated.index
        for dropped in seen[index][size...] {
            switch dropped.kind {
            case .paymentOut: transfers[dropped.transferID!]?.debits -= 1; balances[index] += dropped.minorUnits
            case .paymentIn: transfers[dropped.transferID!]?.credits -= 1; balances[index] -= dropped.minorUnits
            case .reversal: transfers[dropped.transferID!]?.reversals -= 1; balances[index] -= dropped.minorUnits
            case .deposit:
                balances[index] -= dropped.minorUnits
                if let id = dropped.transferID {
                    deposits[id, default: 1] -= 1
                    if deposits[id] == 0 { undeposited += minted[id] ?? 0 }
                }
            case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .confirmation,
                .settings, .mint, .redemption:
                break
            }
        }
        seen[index].removeSubrange(size...)
        simulated.anchorSizeSeen = simulated.restoredWithAnchor ? 0 : simulated.anchorSizeSeen
    }

    /// The issuer minted a voucher.
    func voucherMinted(_ voucher: SignedVoucher) {
        let amount = voucher.payload.amount.minorUnits
        minted[StatementID(voucher.payload.voucherID)] = amount
        mintedTotal += amount
        undeposited += amount
    }

    /// A wallet reported a voucher's deposit done (recorded or a duplicate); checked after the step.
    func depositReported(_ voucher: SignedVoucher, by simulated: SimulatedWallet) {
        depositsReported.append((StatementID(voucher.payload.voucherID), simulated.index))
    }

    /// A double spend an honest payee could have caught with today's rules (Wallet.keepForkEvidence): it
    /// credits a transfer while it holds another credit from the same payer, with a checkpoint signed by the
    /// same key, whose debit sits at the same position of the payer's ledger, or whose checkpoint has the
    /// same size but another root or head.
    /// Such a payer forked its ledger (a restore with its anchor), and the payee must hold the evidence.
    private func checkDoubleSpend(_ transfer: SignedTransfer, payee: SimulatedWallet) throws {
        guard payee.isHonest else { return }
        let payload = transfer.payload
        let checkpoint = payload.checkpoint.checkpoint
        let credit = CreditSeen(
            transferID: StatementID(payload.order.transferID),
            debitPosition: (try? LedgerEntry.decode(payload.debitLeaf))?.position,
            checkpointSize: checkpoint.size, checkpointRoot: checkpoint.root, checkpointHead: checkpoint.head,
            checkpointKey: checkpoint.walletKey.fingerprintDigest)
        let payer = payload.order.payerWalletID
        let earlier = creditsSeen[payee.index, default: [:]][payer, default: []]
        creditsSeen[payee.index, default: [:]][payer, default: []].append(credit)
        let conflicting = earlier.first { other in
            guard other.transferID != credit.transferID, other.checkpointKey == credit.checkpointKey else {
                return false
            }
            if let position = credit.debitPosition, other.debitPosition == position { return true }
            return other.checkpointSize == credit.checkpointSize
                && (other.checkpointRoot != credit.checkpointRoot || other.checkpointHead != credit.checkpointHead)
        }
        guard let conflicting, let wallet = payee.wallet else { return }
        simulator.stats.doubleSpendsDetectable += 1
        guard try wallet.ledger.evidence().isEmpty else { return }
        throw fail(
            "double-spend-detected",
            "w\(payee.index) credited transfer \(Hex.encode(credit.transferID.bytes.prefix(6))) while it holds "
                + "transfer \(Hex.encode(conflicting.transferID.bytes.prefix(6))) of the same payer at the same ledger position or "
                + "checkpoint size, and holds no fork evidence")
    }

    /// How many credits of this transfer the auditor has seen.
    func creditCount(of transferID: TransferID) -> Int { transfers[StatementID(transferID)]?.credits ?? 0 }

    /// Every `ready` a payer received: (payer, channel binding, amount).
    private var readies: [(wallet: Int, binding: [UInt8], amount: AssetAmount)] = []
    /// The issuer the honest wallets trust, once the simulator made it.
    var trustedIssuer: WalletID?

    func readyReceived(by wallet: Int, binding: [UInt8], amount: AssetAmount) {
        readies.append((wallet, binding, amount))
    }

    /// When one side's session ends.
    func checkSessionEnd(_ end: SessionEnd, in session: SimulatedSession) throws {
        guard let outcome = end.outcome else { return }
        let payerHonest = simulator.wallets[session.payer.walletIndex].isHonest
        let payeeHonest = simulator.wallets[session.payee.walletIndex].isHonest
        let books = transfers[StatementID(session.transferID)] ?? TransferBooks()
        switch outcome {
        case .failed where end.isPayer && session.kind != .retry:
            guard books.debits == 0 else {
                throw fail(
                    "refusal-zero-debit",
                    "s\(session.number) ended as nothing moved, but the payer debited the transfer")
            }
        case .paid where payeeHonest:
            guard books.credits == 1 else {
                throw fail("exactly-once", "s\(session.number) paid but the payee has no credit")
            }
        case .reversed:
            guard books.reversals == 1, books.credits == 0 else {
                throw fail("refusal-zero-debit", "s\(session.number) reversed but the books say \(books)")
            }
        case .refusedTransfer(let reason) where payerHonest && payeeHonest:
            throw fail(
                "transient-failures-retryable",
                "s\(session.number): an honest payee refused an honest transfer (\(reason))")
        case .failed(.checkpointInconsistent, byPeer: false) where payerHonest && payeeHonest:
            try checkPeerFollowed(end, in: session)
        case .failed, .paid, .unconfirmed, .received, .refusedTransfer:
            break
        }
    }

    /// An honest wallet called an honest peer's checkpoint inconsistent. That is a wrong verdict unless it
    /// had not followed the peer's current key-event log (a log page lost or reordered by the simulated link,
    /// which a real channel would have closed on): with the current log, an honest checkpoint is consistent.
    private func checkPeerFollowed(_ end: SessionEnd, in session: SimulatedSession) throws {
        let peer = simulator.wallets[session.other(end).walletIndex]
        guard let wallet = simulator.wallets[end.walletIndex].wallet, let peerWallet = peer.wallet else { return }
        guard try wallet.peerKeyLog(of: peer.walletID)?.head == peerWallet.keyLog.head else { return }
        throw fail(
            "honest-peers-agree",
            "s\(session.number): w\(end.walletIndex) follows w\(peer.index)'s key-event log "
                + "(\(peerWallet.keyLog.events.count) events), yet called its checkpoint inconsistent")
    }

    // MARK: At the end

    /// After healing and draining: every ledger verifies, every honest peer payment resolved exactly once.
    func checkFinal() throws {
        for simulated in simulator.wallets {
            guard let wallet = simulated.wallet else { throw fail("restart", "w\(simulated.index) is still down") }
            let report = try LedgerVerifier.verify(wallet.ledger, walletID: wallet.walletID, cores: 1)
            guard report.isValid else {
                throw fail("ledger-verifies", "w\(simulated.index): \(report.problems.prefix(3))")
            }
            guard report.state.balances == wallet.state.balances else {
                throw fail(
                    "ledger-verifies",
                    "w\(simulated.index): replay gives \(report.state.balances), the wallet \(wallet.state.balances)"
                )
            }
        }
        // File transfers (`spend --out`) are exempt: one whose spend crashed after the commit never reached
        // a file, and only the person can send its bytes again.
        for (id, books) in transfers where books.debits == 1 && books.isPeer {
            guard let payer = simulator.wallets.first(where: { $0.walletID == books.payerWalletID }),
                let payee = simulator.wallets.first(where: { $0.walletID == books.payeeWalletID }),
                payer.isHonest, payee.isHonest, !payer.isLocked, !payee.isLocked
            else { continue }
            guard books.credits + books.reversals == 1 else {
                throw fail(
                    "retries-resolve",
                    "transfer \(Hex.encode(id.bytes.prefix(6))) of \(books.minorUnits) is unresolved after healing")
            }
        }
        var covered: Int64 = 0
        let evidenceCount = try simulator.wallets.filter { $0.isHonest }.compactMap { $0.wallet }.map {
            try $0.ledger.evidence().count
        }.reduce(0, +)
        // Evidence the restorers left (Adversary) covers none of the workload's excess.
        if evidenceCount > simulator.stats.restorerEvidence { covered = simulator.stats.excessTraced }
        simulator.stats.excessCoveredByEvidence = covered
    }
}
