import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

extension Wallet {
    /// Opens a wallet with its token: unwraps the database key on the token (ECDH), opens the database,
    /// reads the latest signed checkpoint (no replay: balances come from its snapshot) and compares it
    /// with the anchor. A database behind the anchor, or different at the anchor's size, opens locked;
    /// one ahead of it by entries that verify moves the anchor forward.
    /// Take the lock first (`lock`) when the token is not opened yet: then a second process is told the
    /// wallet is busy before it touches the token.
    public static func open(paths: WalletPaths, lock heldLock: WalletLock? = nil, token session: WalletToken,
                            clock: @escaping @Sendable () -> Int64 = systemClock) throws -> Wallet {
        let metadata = try WalletMetadata.load(paths)
        let lock = try heldLock ?? WalletLock(path: paths.lock)
        let walletID = metadata.walletIDBytes
        guard let wrappedBytes = FileManager.default.contents(atPath: paths.wrappedKey) else {
            throw StoreError(.wrappedKeyMissing, "the wrapped database key \(paths.wrappedKey) is missing; without it the "
                + "ledger cannot be opened. Restore it from a backup of the wallet folder")
        }
        let wrapped = try WrappedKeyFile(encoded: Array(wrappedBytes))
        guard wrapped.walletID == walletID else {
            throw StoreError(.foreignDatabase, "\(paths.wrappedKey) belongs to another wallet")
        }
        let agreementKey = try keyOnToken(session, idHex: metadata.agreementKeyID, what: "key-agreement")
        let databaseKey = try wrapped.unwrap(with: TokenUnwrapper(session: session, key: agreementKey))
        let store = try LedgerStore.open(path: paths.database, key: databaseKey, expectedSalt: wrapped.databaseSalt, walletID: walletID)
        let keyLog = try keyEventLog(store, walletID: walletID)
        let current = keyLog.current
        let signingKey = try signingKeyInForce(session, metadata: metadata, log: keyLog)
        guard let (_, latestBytes) = try store.latestCheckpoint(), let latest = try? SignedCheckpoint.decode(latestBytes),
              latest.isValid(signedBy: current.signingKey), keyLog.check(latest) == .inForce,
              latest.checkpoint.walletID == walletID else {
            throw StoreError(.corrupted, "the ledger's latest checkpoint is missing or not signed by the wallet key in force")
        }
        let peaks = try store.treePeaks()
        guard peaks.size == latest.checkpoint.size, peaks.root == latest.checkpoint.root, try store.size() == peaks.size else {
            throw StoreError(.corrupted, "the ledger's entries do not match its latest signed checkpoint; run `secure ledger verify`")
        }
        let state = try resumedState(store, latest.checkpoint)
        let anchor = makeAnchor(kind: metadata.anchor, session: session, walletID: walletID)
        let lockReason = try checkAnchor(anchor, store: store, latest: latest, log: keyLog)
        return Wallet(paths: paths, metadata: metadata, keyLog: keyLog, token: session, lock: lock, store: store,
                      anchor: anchor, signer: signingKey.map { TokenSigner(token: session, key: $0) }, state: state,
                      peaks: peaks, latest: latest, lockReason: lockReason, clock: clock)
    }

    static func keyOnToken(_ session: WalletToken, idHex: String, what: String) throws -> TokenKey {
        var uri = session.uri
        uri.id = Hex.decode(idHex)
        do {
            return try session.key(uri)
        } catch let error as TokenError where error.code == .keyNotFound {
            throw TokenError(.keyNotFound, "the wallet's \(what) key (id \(idHex)) is not on the token \"\(session.label)\"; "
                + "is this the wallet's token? After losing it, use `secure wallet recover`")
        }
    }

    /// Entry 0's signed inception event; its digest must be the wallet id.
    static func inceptionEvent(_ store: LedgerStore, walletID: [UInt8]) throws -> SignedKeyEvent {
        guard let entry = try store.entry(at: 0), entry.kind == .keyEvent,
              let event = try? SignedKeyEvent.decode(entry.payload), event.event.digest == walletID else {
            throw StoreError(.corrupted, "entry 0 is not this wallet's signed inception event")
        }
        return event
    }

    /// The state at the latest checkpoint: balances and windows from its snapshot, budgets from the few
    /// budget entries, earlier statements through the store's index.
    static func resumedState(_ store: LedgerStore, _ checkpoint: Checkpoint) throws -> LedgerState {
        var budgets: [String: Budget] = [:]
        for entry in try store.entries(kind: .budgetChange) {
            switch try BudgetChange.decode(payload: entry.payload, category: entry.category) {
            case .set(let budget): budgets[budget.category] = budget
            case .remove(let category): budgets[category] = nil
            }
        }
        guard let last = try store.entry(at: checkpoint.size - 1) else {
            throw StoreError(.corrupted, "the entry the latest checkpoint ends at is missing")
        }
        return LedgerState(resumingAt: checkpoint, budgets: Array(budgets.values), lastTime: last.time, index: store)
    }

    /// Compares the database with the anchor. Returns why the wallet must lock, or nil after moving the
    /// anchor forward to a database that provably extends it.
    static func checkAnchor(_ anchor: AnchorStorage, store: LedgerStore, latest: SignedCheckpoint,
                            log: KeyEventLog) throws -> WalletLockReason? {
        guard let bytes = try anchor.load() else {
            if latest.checkpoint.size == 1 {  // an init that stopped before its first anchor write
                try anchor.store(latest.encoded)
                return nil
            }
            return .anchorMissing
        }
        // The anchor may predate a rotation (a crash between commit and anchor update): any key in force
        // when it was signed will do.
        guard let anchored = try? SignedCheckpoint.decode(bytes), log.check(anchored) == .inForce else {
            return .anchorMissing
        }
        let anchoredSize = anchored.checkpoint.size
        guard anchoredSize <= latest.checkpoint.size else {
            return .behindAnchor(databaseSize: latest.checkpoint.size, anchorSize: anchoredSize)
        }
        if anchoredSize == latest.checkpoint.size {
            // The usual case, and O(1): the anchor is the latest checkpoint.
            let same = anchored.checkpoint.root == latest.checkpoint.root && anchored.checkpoint.head == latest.checkpoint.head
            return same ? nil : .divergent(size: anchoredSize)
        }
        let leaves = try store.leafHashes(from: 0, to: anchoredSize)
        let tree = MerkleTree(leafHashes: leaves)
        guard tree.root() == anchored.checkpoint.root, try store.entry(at: anchoredSize - 1)?.link == anchored.checkpoint.head else {
            return .divergent(size: anchoredSize)
        }
        if anchoredSize < latest.checkpoint.size {
            // What a crash between commit and anchor update leaves: the newer entries chain on and the latest
            // checkpoint, signed by the wallet key, covers them. Move the anchor forward.
            try verifyChain(store, from: anchoredSize - 1, to: latest.checkpoint.size)
            try anchor.store(latest.encoded)
        }
        return nil
    }

    /// Checks that entries [from, to) link to each other.
    static func verifyChain(_ store: LedgerStore, from: UInt64, to: UInt64) throws {
        var previous: [UInt8]?
        try store.forEachEntry(from: from, to: to) { entry in
            if let previous, entry.previousLink != previous {
                throw StoreError(.corrupted, "entry \(entry.position) does not link to entry \(entry.position - 1)")
            }
            previous = entry.link
        }
    }
}
