import SecureCore
import SecureCrypto
import SecureStore

/// Peers' key-event logs: how this wallet follows the rotations of wallets it deals with. A log is
/// self-certifying from the wallet id (the inception's digest), so the first valid log seen is kept;
/// afterwards a newer log replaces it only through a valid chain that extends it, and two events with
/// one sequence are kept as fork evidence.
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
        case .conflict(let conflict): try ledger.storeEvidence(ForkEvidence.conflictingKeyEvents(conflict).encoded)
        case .refused: break
        }
        return outcome
    }

    /// A peer's key-event log as this wallet knows it.
    public func peerKeyLog(of peerWalletID: WalletID) throws -> KeyEventLog? {
        try ledger.peerKeyEventLog(wallet: peerWalletID)
    }
}
