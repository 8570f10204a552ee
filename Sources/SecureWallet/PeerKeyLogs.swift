import SecureCore
import SecureCrypto
import SecureStore

/// Peers' key-event logs: how this wallet follows the rotations of wallets it deals with. A log is
/// self-certifying from the wallet id (the inception's digest), so the first valid log seen is kept;
/// afterwards a newer log replaces it only through a valid chain that extends it, and two events with
/// one sequence are kept as fork evidence. Nothing but these logs decides which key may sign for a
/// wallet: not a card's or a statement's own key, not the command line.
extension Wallet {
    /// Follows a peer's key-event log; stores it, or the evidence, as the outcome says.
    @discardableResult
    public func followKeyEvents(of peerWalletID: WalletID, events: [SignedKeyEvent]) throws -> KeyEventFollow {
        guard peerWalletID != walletID else {
            return .refused(KeyEventError(.wrongWallet, "a peer sent this wallet's own wallet id"))
        }
        let offered: KeyEventLog
        do {
            offered = try KeyEventLog(verifying: events, walletID: peerWalletID)
        } catch let error as KeyEventError {
            return .refused(error)
        }
        guard var known = try ledger.peerKeyEventLog(wallet: peerWalletID) else {
            try ledger.storePeerKeyEvents(wallet: peerWalletID, events: offered.events)
            return .followed
        }
        let outcome = known.follow(offered.events)
        switch outcome {
        case .followed: try ledger.storePeerKeyEvents(wallet: peerWalletID, events: known.events)
        case .conflict(let conflict):
            // `known` is unchanged by a conflict: the log that holds one of the two events.
            try ledger.storeEvidence(ForkEvidence(.conflictingKeyEvents(conflict), log: known).encoded)
        case .refused: break
        }
        return outcome
    }

    /// A peer's key-event log as this wallet knows it.
    public func peerKeyLog(of peerWalletID: WalletID) throws -> KeyEventLog? {
        try ledger.peerKeyEventLog(wallet: peerWalletID)
    }

    /// The longest log of `peerWalletID` that this wallet can vouch for, given an `offered` one (from an
    /// envelope or a card): the known log, or the offered one where it extends the known one. Nothing is
    /// stored here, so a statement that turns out unproven leaves no trace; two events with one sequence
    /// are kept as fork evidence (they prove themselves) and give nil, as does an offered log of another
    /// wallet.
    func provenLog(of peerWalletID: WalletID, offered: KeyEventLog?) throws -> KeyEventLog? {
        let known = try peerKeyLog(of: peerWalletID)
        guard let offered, offered.walletID == peerWalletID else { return known }
        guard var merged = known else { return offered }
        switch merged.follow(offered.events) {
        case .followed: return merged
        case .conflict(let conflict):
            try ledger.storeEvidence(ForkEvidence(.conflictingKeyEvents(conflict), log: merged).encoded)
            return nil
        // An older log than the known one (or one that breaks the chain) teaches nothing new.
        case .refused: return known
        }
    }

    /// Held fork evidence (type 4 or 5) that key `keySequence` of `peer` signed after its retirement, if any:
    /// it refuses that key sequence's statements, and only them (the wallet stays payable under its other
    /// keys). Only the key's holder can sign what such evidence carries, so unlike a ban of the wallet (types
    /// 1, 2 and 6, found here only) it counts whoever found it, once proven against the peer's log as this
    /// wallet follows it. It is looked for only when a peer uses a key it has rotated away from, which is rare.
    public func retiredKeyEvidence(against peer: WalletID, keySequence: UInt64) throws -> EvidenceDigest? {
        let known = try peerKeyLog(of: peer)
        for bytes in try ledger.evidence() {
            guard let evidence = (try? ForkEvidence.decode(bytes)) ?? nil, evidence.accused == peer else { continue }
            let retired: SignedKeyEvent
            switch evidence.kind {
            case .retiredKeySignature(let late): retired = late.retiredEvent
            case .retiredKeyStatement(let late): retired = late.retiredEvent
            case .conflictingCheckpoints, .conflictingLeaves, .conflictingKeyEvents, .rolledBack, .replayMismatch:
                continue
            }
            guard retired.event.sequence == keySequence, evidence.verify(knownLog: known).isProven else { continue }
            return EvidenceDigest(of: bytes)
        }
        return nil
    }

    /// Keeps the log a proven statement was checked against, when it is newer than the one stored.
    func keepProvenLog(_ log: KeyEventLog) throws {
        guard log.walletID != walletID, try peerKeyLog(of: log.walletID)?.head != log.head else { return }
        try followKeyEvents(of: log.walletID, events: log.events)
    }
}
