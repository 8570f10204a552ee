import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// How a wallet is opened: by a command that appends (or otherwise writes), or by one that only reads.
public enum WalletAccess: Sendable {
    /// Takes the wallet's lock (a second appending process gets "wallet busy" at once), upgrades an older
    /// schema, and repairs what a crash left: an anchor behind a database that provably extends it, or an
    /// anchor that an interrupted `wallet init` never wrote.
    case appending
    /// Takes no lock and writes nothing, neither the database nor the anchor: the database opens
    /// read-only as one WAL snapshot, so a writer in another process (a `secure receive` in a session) never
    /// blocks it. What an appending open would repair is reported in `repairNeeded` instead.
    case reading
}

extension Wallet {
    /// How many times a reading open reads the anchor before giving up: a writer replaces the token's
    /// anchor object by creating the new one and destroying the old, so a reader in another process can
    /// find a handle that is gone by the time it reads it. Three reads cover that race; a token that
    /// fails three times in a row is reported.
    static let anchorReadAttemptsMax = 3

    /// Opens a wallet with its token: unwraps the database key on the token (ECDH), opens the database,
    /// reads the latest signed checkpoint (no replay: balances come from its snapshot) and compares it
    /// with the anchor. A database behind the anchor, or different at the anchor's size, opens locked;
    /// one ahead of it by entries that verify moves the anchor forward (when appending). Index tables
    /// that are not the ones the checkpoint's D commits to open locked too (`indexMismatch`).
    ///
    /// The wallet's lock is taken here, for `.appending` only, after the token session was opened by the
    /// caller: the PIN has been read by then, so a PIN prompt never holds the wallet.
    public static func open(
        paths: WalletPaths, token session: WalletToken, access: WalletAccess = .appending,
        clock: @escaping @Sendable () -> Int64 = systemClock
    ) throws -> Wallet {
        let metadata = try WalletMetadata.load(paths)
        // The attestations kept at init and rotation tell the touch prompt a PIV key's touch policy where the
        // module offers none (OpenSC); the database key's unwrap below may already wait for a touch.
        TouchPrompt.learn(keptAttestationCertificates(paths))
        let lock = access == .appending ? try WalletLock(path: paths.lock) : nil
        let walletID = try metadata.parsedWalletID()
        guard let wrappedBytes = FileManager.default.contents(atPath: paths.wrappedKey) else {
            throw StoreError(
                .wrappedKeyMissing,
                "the wrapped database key \(paths.wrappedKey) is missing; without it the "
                    + "ledger cannot be opened. Restore it from a backup of the wallet folder")
        }
        let wrapped = try WrappedKeyFile(encoded: Array(wrappedBytes))
        guard wrapped.walletID == walletID else {
            throw StoreError(.foreignDatabase, "\(paths.wrappedKey) belongs to another wallet")
        }
        let agreementKey = try keyOnToken(session, idHex: metadata.agreementKeyID, what: "key-agreement")
        let databaseKey = try wrapped.unwrap(with: TokenUnwrapper(session: session, key: agreementKey))
        let onToken = TokenAnchor(session: session, walletID: walletID)
        let onFile = FileAnchor(path: WalletPaths.fileAnchor(walletID: walletID))
        let store: LedgerStore
        var tokenBytes: [UInt8]?
        var fileBytes: [UInt8]?
        switch access {
        case .appending:
            store = try LedgerStore.open(
                path: paths.database, key: databaseKey, expectedSalt: wrapped.databaseSalt,
                walletID: walletID)
        case .reading:
            // The anchor is read before the snapshot is taken. A writer commits before it moves the anchor, so
            // the snapshot is then at least as new as the anchor, and a writer's progress is never mistaken for
            // a rollback.
            // Both anchors are read before the snapshot: which one decides comes from the ledger.
            tokenBytes = try loadAnchorForReading(onToken)
            if tokenBytes == nil { fileBytes = try loadAnchorForReading(onFile) }
            store = try LedgerStore.openForReading(
                path: paths.database, key: databaseKey,
                expectedSalt: wrapped.databaseSalt, walletID: walletID)
        }
        let keyLog = try keyEventLog(store, walletID: walletID)
        let current = keyLog.current
        let signingKey = try signingKeyInForce(session, metadata: metadata, log: keyLog)
        guard let (_, latestBytes) = try store.latestCheckpoint(),
            let latest = try LedgerStore.decodeOwnCheckpoint(latestBytes),
            latest.isValid(signedBy: current.signingKey), keyLog.check(latest) == .inForce,
            latest.checkpoint.walletID == walletID
        else {
            throw StoreError(
                .corrupted, "the ledger's latest checkpoint is missing or not signed by the wallet key in force")
        }
        let peaks = try store.treePeaks()
        guard peaks.size == latest.checkpoint.size, peaks.root == latest.checkpoint.root, try store.size() == peaks.size
        else {
            throw StoreError(
                .corrupted, "the ledger's entries do not match its latest signed checkpoint; run `secure ledger verify`"
            )
        }
        let state = try resumedState(store, latest.checkpoint)
        let tokenHoldsAnchor = try access == .reading ? tokenBytes != nil : onToken.load() != nil
        let anchor = findAnchor(
            state.settings.anchorKind, tokenHoldsAnchor: tokenHoldsAnchor, token: onToken, file: onFile)
        let anchorBytes = anchor === onToken ? tokenBytes : fileBytes
        var lockReason: WalletLockReason?
        var repairNeeded: String?
        switch access {
        case .appending:
            lockReason = try checkAnchor(anchor, store: store, latest: latest, log: keyLog)
        case .reading:
            switch try compareAnchor(anchorBytes, store: store, latest: latest, log: keyLog) {
            case .consistent: lockReason = nil
            case .lock(let reason): lockReason = reason
            case .neverWritten:
                lockReason = nil
                repairNeeded =
                    "the anchor was never written (`secure wallet init` stopped before it); "
                    + "`secure ledger repair` writes it"
            case .behind(let anchoredSize):
                lockReason = nil
                repairNeeded =
                    "the anchor is at entry \(anchoredSize) and the database at \(latest.checkpoint.size): "
                    + "another secure process is between a commit and its anchor update, or one stopped there. The "
                    + "entries in between verify; if this stays, `secure ledger repair` moves the anchor forward"
            }
        }
        // The index tables against the D the latest checkpoint signed: derived here at every open, never
        // stored. The anchor's lock, when there is one, says more (and `--accept-rollback` still refuses,
        // because `ledger verify` reports this too).
        if lockReason == nil, !indexMatches(store, latest.checkpoint) { lockReason = .indexMismatch }
        // A failed `ledger verify` locks until one succeeds; the anchor's lock, when there is one, says more.
        if lockReason == nil, let failure = try VerificationMark(session: session, walletID: walletID).load() {
            lockReason = .verificationFailed(failure)
        }
        let signer = signingKey.map { TokenSigner(token: session, key: $0) }
        let wallet = Wallet(
            paths: paths, metadata: metadata, keyLog: keyLog, token: session, lock: lock, store: store,
            anchor: anchor, signer: signer, state: state, peaks: peaks, latest: latest,
            lockReason: lockReason, clock: clock)
        wallet.repairNeeded = repairNeeded
        return wallet
    }

    /// Whether the `statements` and `outgoing` tables are the ones `checkpoint` commits to: D recomputed from
    /// the tables in one pass (O(n) in their rows, no entry replayed) against the checkpoint's D. An adversary
    /// with the database key but not the PIN can rewrite the rows, not sign a checkpoint over them. Tables
    /// that cannot be read (a damaged page) match nothing, so the wallet still opens, locked, and `ledger
    /// verify`, which reads every page, can say what is wrong and record its failure on the token.
    static func indexMatches(_ store: LedgerStore, _ checkpoint: Checkpoint) -> Bool {
        (try? store.indexDigest()) == checkpoint.index
    }

    /// The anchor that decides: the `anchor-<wallet id>` object on the wallet's token whenever the token
    /// holds one; otherwise the kind the ledger's signed `settings` entries name (the token until one says
    /// "file"). `wallet.json` decides nothing, so editing that unsigned file to `"anchor":"file"` cannot swap
    /// the token's anchor for a file the owner wrote, and a ledger that names the token anchor while the
    /// token holds none opens locked (`anchorMissing`). The file anchor serves only a wallet whose ledger
    /// moved to it by a signed entry (`wallet init --allow-file-anchor`, `secure wallet anchor file`).
    static func findAnchor(
        _ kind: AnchorKind, tokenHoldsAnchor: Bool, token: AnchorStorage, file: AnchorStorage
    ) -> AnchorStorage {
        tokenHoldsAnchor || kind == .token ? token : file
    }

    /// Reads the anchor, retrying a failed read a bounded number of times (see `anchorReadAttemptsMax`).
    private static func loadAnchorForReading(_ anchor: AnchorStorage) throws -> [UInt8]? {
        for _ in 1..<anchorReadAttemptsMax {
            if let bytes = try? anchor.load() { return bytes }
        }
        return try anchor.load()
    }

    static func keyOnToken(_ session: WalletToken, idHex: String, what: String) throws -> TokenKey {
        var uri = session.uri
        uri.id = Hex.decode(idHex)
        do {
            return try session.key(uri)
        } catch let error as TokenError where error.code == .keyNotFound {
            throw TokenError(
                .keyNotFound,
                "the wallet's \(what) key (id \(idHex)) is not on the token \"\(session.label)\"; "
                    + "is this the wallet's token? After losing it, use `secure wallet recover`")
        }
    }

    /// Entry 0's signed inception event; its digest must be the wallet id.
    static func inceptionEvent(_ store: LedgerStore, walletID: WalletID) throws -> SignedKeyEvent {
        guard let entry = try store.entry(at: 0), entry.kind == .keyEvent,
            let event = try? SignedKeyEvent.decode(entry.payload), WalletID(inception: event.event) == walletID
        else {
            throw StoreError(.corrupted, "entry 0 is not this wallet's signed inception event")
        }
        return event
    }

    /// The state at the latest checkpoint: balances and windows from its snapshot, budgets and settings from
    /// the few budget and settings entries, earlier statements through the store's index.
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
        let isIssuer = try inceptionEvent(store, walletID: checkpoint.walletID).event.kind == .issuerInception
        return LedgerState(
            resumingAt: checkpoint, isIssuer: isIssuer, budgets: Array(budgets.values),
            settings: try WalletSettings.replay(try store.entries(kind: .settings)), lastTime: last.time, index: store)
    }

    /// What comparing the database with the anchor found.
    enum AnchorFinding: Equatable {
        /// The anchor is the latest checkpoint.
        case consistent
        /// The wallet must lock.
        case lock(WalletLockReason)
        /// No anchor, and the ledger holds only entry 0: an init that stopped before its first anchor write.
        case neverWritten
        /// The anchor is at an earlier size and the database provably extends it: a crash (or, seen by a
        /// reader, a writer) between a commit and the anchor update.
        case behind(anchoredSize: UInt64)
    }

    /// Compares the database with the anchor. Returns why the wallet must lock, or nil after moving the
    /// anchor forward to a database that provably extends it (or writing the one an interrupted init missed).
    static func checkAnchor(
        _ anchor: AnchorStorage, store: LedgerStore, latest: SignedCheckpoint,
        log: KeyEventLog
    ) throws -> WalletLockReason? {
        switch try compareAnchor(try anchor.load(), store: store, latest: latest, log: log) {
        case .consistent: return nil
        case .lock(let reason): return reason
        case .neverWritten, .behind:
            try anchor.store(latest.encoded)
            return nil
        }
    }

    /// Compares the database with the anchor's bytes, reading only.
    static func compareAnchor(
        _ bytes: [UInt8]?, store: LedgerStore, latest: SignedCheckpoint,
        log: KeyEventLog
    ) throws -> AnchorFinding {
        guard let bytes else {
            return latest.checkpoint.size == 1 ? .neverWritten : .lock(.anchorMissing)
        }
        // The anchor may predate a rotation (a crash between commit and anchor update): any key in force
        // when it was signed will do.
        guard let anchored = try? SignedCheckpoint.decode(bytes), log.check(anchored) == .inForce else {
            return .lock(.anchorMissing)
        }
        let anchoredSize = anchored.checkpoint.size
        guard anchoredSize <= latest.checkpoint.size else {
            return .lock(.behindAnchor(databaseSize: latest.checkpoint.size, anchorSize: anchoredSize))
        }
        if anchoredSize == latest.checkpoint.size {
            // The usual case, and O(1): the anchor is the latest checkpoint.
            let same =
                anchored.checkpoint.root == latest.checkpoint.root && anchored.checkpoint.head == latest.checkpoint.head
            return same ? .consistent : .lock(.divergent(size: anchoredSize))
        }
        let leaves = try store.leafHashes(from: 0, to: anchoredSize)
        let tree = MerkleTree(leafHashes: leaves)
        guard tree.root() == anchored.checkpoint.root,
            try store.entry(at: anchoredSize - 1)?.link == anchored.checkpoint.head
        else {
            return .lock(.divergent(size: anchoredSize))
        }
        // What a crash between commit and anchor update leaves: the newer entries chain on and the latest
        // checkpoint, signed by the wallet key, covers them.
        try verifyChain(store, from: anchoredSize - 1, to: latest.checkpoint.size)
        return .behind(anchoredSize: anchoredSize)
    }

    /// Checks that entries [from, to) link to each other.
    static func verifyChain(_ store: LedgerStore, from: UInt64, to: UInt64) throws {
        var previous: Digest32?
        try store.forEachEntry(from: from, to: to) { entry in
            if let previous, entry.previousLink != previous {
                throw StoreError(.corrupted, "entry \(entry.position) does not link to entry \(entry.position - 1)")
            }
            previous = entry.link
        }
    }
}
