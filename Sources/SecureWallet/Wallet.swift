import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// Why a wallet refuses to spend.
public enum WalletLockReason: Equatable, Sendable, CustomStringConvertible {
    /// The database has fewer entries than the anchor: an older copy was restored.
    case behindAnchor(databaseSize: UInt64, anchorSize: UInt64)
    /// The database's tree at the anchor's size is not the anchored one: it was replaced or rewritten.
    case divergent(size: UInt64)
    /// The anchor is gone while the ledger has history.
    case anchorMissing
    /// The last `ledger verify` failed (recorded on the token, see `VerificationMark`); the text says why.
    case verificationFailed(String)
    /// The index tables (`statements`, `outgoing`) are not the ones the latest checkpoint commits to (its D,
    /// `LedgerIndex`): rows were deleted, added or edited with the database key (or a page of them cannot be
    /// read). Derived at every open from the tables, never stored.
    case indexMismatch

    public var description: String {
        switch self {
        case .behindAnchor(let databaseSize, let anchorSize):
            return
                "the database holds \(databaseSize) entries but the anchor has seen \(anchorSize): an older copy of the "
                + "database was restored. Restore the newest copy; if none exists, `--accept-rollback` re-anchors and "
                + "records a signed statement that you did"
        case .divergent(let size):
            return
                "the database's first \(size) entries differ from the ones the anchor signed: the database was replaced "
                + "or rewritten. Restore the wallet's own database"
        case .anchorMissing:
            return "the anchor is missing although the ledger has history; it was deleted, or this is another token"
        case .verificationFailed(let why):
            return
                "the last `secure ledger verify` failed (\(why)). Restore the wallet folder from a good backup, then run "
                + "`secure ledger verify` again: the wallet signs nothing until it verifies"
        case .indexMismatch:
            return
                "the ledger's index (its statements and outgoing tables) differs from the one its latest signed "
                + "checkpoint commits to, or cannot be read: rows were deleted, added or edited outside secure. The wallet signs nothing "
                + "while it differs. Run `secure ledger verify` to see the problems, and restore the wallet folder "
                + "from a good backup"
        }
    }

    /// Whether the lock stops every signature (receipts, refusals, measurements), not only appends: a failed
    /// verification and a tampered index do; the anchor's locks leave `--accept-rollback` its signed entry.
    var stopsSignatures: Bool {
        switch self {
        case .verificationFailed, .indexMismatch: true
        case .behindAnchor, .divergent, .anchorMissing: false
        }
    }
}

/// One wallet: its ledger, its token and its anchor. This is where the wallet steps run (budget check,
/// PIN, sign, append) for every way money moves, so `spend`, `deposit`, `accept` and the peer protocol
/// share one code path. A wallet opened for appending holds the wallet's lock (`WalletLock`), so one
/// process appends at a time; a wallet opened for reading holds no lock and reads one WAL snapshot.
public final class Wallet {
    public let paths: WalletPaths
    public internal(set) var metadata: WalletMetadata
    public let walletID: WalletID
    /// The key event currently in force: the last key-bearing event of `keyLog` (a clearing delegation after it
    /// changes no key).
    public internal(set) var keyEvent: SignedKeyEvent
    /// The wallet's verified key-event log, read from the ledger's key-event entries.
    public internal(set) var keyLog: KeyEventLog
    public let token: WalletToken
    /// The one-writer lock, held while this wallet is open for appending; nil when it is open for reading.
    let lock: WalletLock?
    let store: LedgerStore
    /// The anchor in use; `changeAnchor(to:)` replaces it after the signed `settings` entry.
    internal(set) var anchor: AnchorStorage
    var tokenSigner: MessageSigner?
    /// The signer of the key in force; a recovered wallet has none until it rotates to a key on its new token.
    package var signer: MessageSigner {
        get throws {
            // A failed `ledger verify` or a tampered index stops every signature, not only appends (receipts,
            // measurements).
            if let lockReason, lockReason.stopsSignatures {
                throw WalletError(.locked, "the wallet is locked and signs nothing: \(lockReason)")
            }
            guard let tokenSigner else {
                throw WalletError(
                    .keyMismatch,
                    "this wallet was recovered onto a new token and its signing key is not "
                        + "there: it can be read but not spend or sign until it rotates to a key on this token "
                        + "(`secure keys rotate --backup-token URI`)")
            }
            return tokenSigner
        }
    }
    public private(set) var state: LedgerState
    private(set) var peaks: MerkleCompactRange
    /// The latest signed checkpoint; nil only while entry 0 is being written.
    public private(set) var latest: SignedCheckpoint?
    /// Set when the anchor shows a rollback or a replaced database; the wallet then refuses to spend.
    public internal(set) var lockReason: WalletLockReason?
    /// Why the anchor could not follow the last commit, while it lags behind the database.
    public internal(set) var anchorLag: String?
    /// What a wallet opened for reading found that an open for appending would repair (it never repairs
    /// anything itself), with the command that does it; nil when nothing needs it.
    public internal(set) var repairNeeded: String?
    /// Whether this wallet was opened for reading: it holds no lock and cannot append.
    public var isReadOnly: Bool { lock == nil }
    /// Fork evidence the last `accept` found against the payer (also kept in the ledger's evidence table).
    public internal(set) var lastEvidence: [ForkEvidence] = []
    /// Milliseconds since the epoch; tests replace it.
    package let clock: @Sendable () -> Int64
    /// Whether the clock is taken as right although it runs more than `clockJumpMillisecondsMax` past the
    /// last entry: a command's `--accept-clock`, after a person said the wallet was not used for that long.
    public var acceptsClockJump = false
    /// Crash points for the simulator (SecureSimulation); nil in every production path.
    @_spi(Simulation) public var faultHooks: WalletFaultHooks?

    /// The signing key in force.
    public var signingKey: P256.PublicKey { keyEvent.event.signingKey }

    init(
        paths: WalletPaths, metadata: WalletMetadata, keyLog: KeyEventLog, token: WalletToken, lock: WalletLock?,
        store: LedgerStore, anchor: AnchorStorage, signer: MessageSigner?, state: LedgerState,
        peaks: MerkleCompactRange, latest: SignedCheckpoint?, lockReason: WalletLockReason? = nil,
        clock: @escaping @Sendable () -> Int64
    ) {
        self.paths = paths
        self.metadata = metadata
        walletID = keyLog.walletID // open checked it against wallet.json
        self.keyLog = keyLog
        keyEvent = keyLog.inForce
        self.token = token
        self.lock = lock
        self.store = store
        self.anchor = anchor
        tokenSigner = signer
        self.state = state
        self.peaks = peaks
        self.latest = latest
        self.lockReason = lockReason
        self.clock = clock
    }

    public static let systemClock: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The furthest past the last entry that a new entry may be dated without `acceptsClockJump`: 31 days.
    /// Entry times never go backwards, so one entry dated by a clock that runs years ahead (a mistyped year,
    /// a bad time server) would date every later entry in that future and move the budget windows with it.
    /// Such clocks are off by far more than a month, while a wallet left unused for more than a month is
    /// rare enough that asking its owner once costs little.
    public static let clockJumpMillisecondsMax: Int64 = 31 * 24 * 60 * 60 * 1000

    // MARK: Creating

    /// What `wallet init` needs besides the token session.
    public struct InitOptions {
        public var tokenURI: PKCS11URI
        /// The backup token's session and URI: it receives a copy of the database key and holds the next
        /// signing key (pre-rotation).
        public var backup: (token: WalletToken, uri: PKCS11URI)
        public var allowFileAnchor: Bool
        public var label: String
        /// Keys already on the tokens to use instead of generating them, for tokens whose keys are made by
        /// their own tool (a PIV card: 9C signs, 9D agrees). Each is checked as a generated key would be.
        public var existingKeys: ExistingKeys
        /// Make an issuer's wallet (`secure issuer init`): it mints vouchers and holds no money.
        public var isIssuer: Bool
        /// The token safeguards given up at init (`--allow-unenforced-pin`, `--allow-unproven-origin`), each
        /// recorded by a signed `settings` entry so that later commands need not repeat the flag.
        public var tokenAllowances: Set<TokenAllowance>
        /// The 32-byte secret of `--recovery-words`: every key event then commits to its recovery key, and
        /// the database key is also wrapped to it. Nil makes a wallet without recovery words.
        public var recoverySecret: SecretBytes?
        /// The key-event version the inception is written in: the current one, which names a new contact key.
        /// Tests set 2 to make a wallet as one made before contact keys was (no contact key until it rotates).
        package var inceptionVersion = KeyEvent.encodingVersion

        public init(
            tokenURI: PKCS11URI, backup: (token: WalletToken, uri: PKCS11URI), allowFileAnchor: Bool,
            label: String = "wallet",
            existingKeys: ExistingKeys = ExistingKeys(), isIssuer: Bool = false,
            tokenAllowances: Set<TokenAllowance> = [], recoverySecret: SecretBytes? = nil
        ) {
            precondition(recoverySecret.map { $0.count == RecoveryWords.secretByteCount } ?? true)
            self.isIssuer = isIssuer
            self.tokenAllowances = tokenAllowances
            self.recoverySecret = recoverySecret
            self.tokenURI = tokenURI
            self.backup = backup
            self.allowFileAnchor = allowFileAnchor
            self.label = label
            self.existingKeys = existingKeys
        }
    }

    /// Key URIs (by id) to select instead of generating; nil generates.
    public struct ExistingKeys {
        public var signing, agreement, next, backupAgreement: PKCS11URI?

        public init(
            signing: PKCS11URI? = nil, agreement: PKCS11URI? = nil, next: PKCS11URI? = nil,
            backupAgreement: PKCS11URI? = nil
        ) {
            self.signing = signing
            self.agreement = agreement
            self.next = next
            self.backupAgreement = backupAgreement
        }
    }

    /// Selects the key a URI names, or generates one.
    private static func key(_ uri: PKCS11URI?, on session: WalletToken, label: String, usage: KeyUsage) throws
        -> TokenKey
    {
        if let uri { return try session.selectKey(uri, usage: usage) }
        return try session.generateKey(label: label, usage: usage)
    }

    /// Makes a wallet: the signing key and a separate key-agreement key on the token, the next signing key
    /// and a backup key-agreement key on the backup token, entry 0 (the signed inception event), a random
    /// 256-bit database key wrapped to both key-agreement keys, and the first checkpoint and anchor.
    public static func create(
        paths: WalletPaths, token session: WalletToken, options: InitOptions,
        clock: @escaping @Sendable () -> Int64 = systemClock
    ) throws -> Wallet {
        guard !FileManager.default.fileExists(atPath: paths.metadata) else {
            throw StoreError(.walletExists, "a wallet already exists at \(paths.directory); it is never overwritten")
        }
        try FileManager.default.createDirectory(
            atPath: paths.directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let lock = try WalletLock(path: paths.lock)
        // A database left by an init that crashed before wallet.json was written belongs to no wallet.
        for leftover in [paths.database, paths.database + "-wal", paths.database + "-shm", paths.wrappedKey] {
            try? FileManager.default.removeItem(atPath: leftover)
        }
        guard session.supportsECDH else {
            // The inception event names a P-256 key-agreement key, so the wallet's own token needs ECDH. A
            // token with RSA-OAEP only (a TPM) can be the backup token, whose copy is wrapped to RSA.
            throw TokenError(
                .unsupported,
                "the token \"\(session.label)\" has no ECDH (CKM_ECDH1_DERIVE), and a "
                    + "wallet's key event names a P-256 key-agreement key on its token. Use it as the --backup-token "
                    + "(its copy of the database key is then wrapped with RSA-OAEP), or choose a token with ECDH")
        }
        let anchorKind = try chooseAnchor(session: session, allowFileAnchor: options.allowFileAnchor)
        let chosen = options.existingKeys
        let signingKey = try key(chosen.signing, on: session, label: options.label, usage: .sign)
        let agreementKey = try key(chosen.agreement, on: session, label: options.label + "-agreement", usage: .derive)
        let nextKey = try key(chosen.next, on: options.backup.token, label: options.label + "-next", usage: .sign)
        let backupAgreement =
            try chosen.backupAgreement.map { AgreementKey.ecdh(try options.backup.token.selectKey($0, usage: .derive)) }
            ?? AgreementKey.generate(on: options.backup.token, label: options.label + "-backup-agreement")
        let backupAgreementID: [UInt8]
        switch backupAgreement {
        case .ecdh(let key): backupAgreementID = key.id
        case .rsa(let key): backupAgreementID = key.id
        }
        guard signingKey.id != agreementKey.id, nextKey.id != backupAgreementID else {
            throw WalletError(.invalidInput, "the signing and key-agreement keys must be two different keys")
        }
        // Origins: the keys this token holds, and the next key, which will sign once put in force. On a PIV
        // token an attestation proves them; elsewhere the module's word does (KeyOrigins.swift).
        let signingOrigin = try checkedOrigin(of: signingKey, on: session, what: "the signing key", paths: paths)
        _ = try checkedOrigin(of: agreementKey, on: session, what: "the key-agreement key", paths: paths)
        _ = try checkedOrigin(of: nextKey, on: options.backup.token, what: "the next signing key", paths: paths)
        if case .ecdh(let key) = backupAgreement {
            _ = try checkedOrigin(
                of: key, on: options.backup.token, what: "the backup key-agreement key", paths: paths)
        }
        let signer = TokenSigner(token: session, key: signingKey)
        // Every sequence a log can reach gets its recovery commitment now, while the secret is at hand.
        let commitments = try options.recoverySecret.map {
            try Wallet.recoveryCommitments(secret: $0, count: KeyEventLog.eventCountMax)
        }
        let contactKey = options.inceptionVersion >= 3 ? newContactKey() : nil
        let inception = try SignedKeyEvent(
            KeyEvent.inception(
                signingKey: signingKey.publicKey, nextKey: nextKey.publicKey,
                agreementKey: agreementKey.publicKey, issuer: options.isIssuer, origin: signingOrigin.recorded,
                recoveryCommitment: commitments?[0] ?? KeyEvent.noRecoveryCommitment,
                contactKeyDigest: contactKey?.digest ?? KeyEvent.noContactKey
            ).writtenAsVersion(options.inceptionVersion),
            signer: signer)
        let walletID = WalletID(inception: inception.event)
        let metadata = WalletMetadata(
            format: WalletMetadata.currentFormat, walletID: walletID.hex,
            token: options.tokenURI.withoutPIN.tokenOnly.description,
            signingKeyID: Hex.encode(signingKey.id), agreementKeyID: Hex.encode(agreementKey.id),
            anchor: anchorKind, backupToken: options.backup.uri.withoutPIN.tokenOnly.description)
        let databaseKey = SecretBytes(randomCount: 32)
        let store = try LedgerStore.create(path: paths.database, key: databaseKey, walletID: walletID)
        if let commitments {
            try store.setMeta(recoveryCommitmentsMeta, commitments.flatMap { $0.bytes })
        }
        let anchor = makeAnchor(kind: anchorKind, session: session, walletID: walletID)
        let wallet = Wallet(
            paths: paths, metadata: metadata, keyLog: try KeyEventLog(inception: inception), token: session, lock: lock,
            store: store, anchor: anchor,
            signer: signer, state: LedgerState(), peaks: MerkleCompactRange(), latest: nil, clock: clock)
        let time = clock()
        // The contact key's seed is committed with the inception's entry, in its transaction.
        _ = try wallet.append(
            { position, previous, _ in
                try LedgerEntry(
                    position: position, id: .random(), kind: .keyEvent, amount: nil, time: time,
                    payload: inception.encoded, previousLink: previous)
            }, contactKey: contactKey.map { (sequence: 0, seed: $0.seed) })
        // The ledger names the anchor it is kept by: a token anchor unless it says otherwise by a signed entry.
        if anchorKind == "file" {
            try wallet.appendDraft(
                EntryDraft(
                    kind: .settings, amount: nil, note: "anchor kept in a file (--allow-file-anchor)",
                    statement: nil, payload: SettingsChange.anchorKind(.file).payload))
        }
        for allowance in options.tokenAllowances.sorted(by: { $0.rawValue < $1.rawValue }) {
            try wallet.appendDraft(
                EntryDraft(
                    kind: .settings, amount: nil, note: "token used with --allow-\(allowance)", statement: nil,
                    payload: SettingsChange.tokenAllowance(allowance, allowed: true).payload))
        }
        wallet.metadata.allow = wallet.state.settings.tokenAllowances.map(\.description).sorted()
        var wrapped = WrappedKeyFile(
            walletID: walletID, key: databaseKey, databaseSalt: try LedgerStore.fileSalt(paths.database))
        try wrapped.wrap(databaseKey, to: agreementKey.publicKey)
        try backupAgreement.wrap(databaseKey, into: &wrapped)
        if let secret = options.recoverySecret {
            try wrapped.wrap(databaseKey, toRecoverySecret: secret)
            guard try wrapped.unwrap(recoverySecret: secret) == databaseKey else {
                preconditionFailure("the recovery words' copy of the database key does not open")
            }
        }
        // Each token proves it can unwrap its copy before the wallet exists: a token whose ECDH or RSA-OAEP
        // fails, or gives something else, is found now and not when the money is needed.
        for (tokenSession, key) in [
            (session, AgreementKey.ecdh(agreementKey)), (options.backup.token, backupAgreement),
        ] {
            let unwrapped = try key.unwrap(wrapped, session: tokenSession)
            guard unwrapped == databaseKey else {
                throw WalletError(
                    .verificationFailed,
                    "the token \"\(tokenSession.label)\" unwrapped a different "
                        + "database key; its key agreement cannot be trusted with the wallet")
            }
        }
        try DurableFile.write(wrapped.encoded, to: paths.wrappedKey)
        try wallet.metadata.save(paths)
        return wallet
    }

    /// The token anchor where the token keeps private data objects; the file anchor only when allowed.
    static func chooseAnchor(session: WalletToken, allowFileAnchor: Bool) throws -> String {
        do {
            try session.replaceDataObject(application: TokenAnchor.application, label: "probe", value: [0])
            try session.destroyDataObjects(application: TokenAnchor.application, label: "probe")
            return "token"
        } catch let error as TokenError {
            guard allowFileAnchor else {
                throw TokenError(
                    .unsupported,
                    "the token cannot hold the anchor as a private data object (\(error)); "
                        + "pass --allow-file-anchor to keep it in a file instead, which only detects a rollback of the "
                        + "database alone (see docs/THREAT-MODEL.md)")
            }
            return "file"
        }
    }

    static func makeAnchor(kind: String, session: WalletToken, walletID: WalletID) -> AnchorStorage {
        kind == "token"
            ? TokenAnchor(session: session, walletID: walletID)
            : FileAnchor(path: WalletPaths.fileAnchor(walletID: walletID))
    }

    // MARK: Appending

    /// The wallet step every change goes through: build the entry, apply it to the state (every refusal
    /// happens here, before the token is asked for anything), sign one checkpoint that commits to the new
    /// entry through the root (the only token operation), commit entry and checkpoint durably, then move
    /// the anchor. A failure before the commit changes nothing.
    ///
    /// `outgoing`, when given, makes the row of a transfer sent with this entry (a debit), from the entry
    /// and its signed checkpoint; it is committed in the same transaction, so the debit and the exact
    /// transfer to send exist together or not at all. `confirms` marks a sent transfer confirmed in the
    /// same transaction (a confirmation entry), and `contacts` writes the contact rows that a contact
    /// settings entry names. The checkpoint is signed inside the transaction, over the index commitment D of
    /// the rows it commits (`LedgerStore.append`). `contactKey` is the seed of the contact key that the key
    /// event this entry records names; it is stored in the same transaction.
    @discardableResult
    public func append(
        _ build: (_ position: UInt64, _ previousLink: Digest32, _ time: Int64) throws -> LedgerEntry,
        outgoing: ((LedgerEntry, SignedCheckpoint) throws -> LedgerStore.Outgoing)? = nil,
        consumes readyRecord: LedgerStore.ReadyRecordUse? = nil, confirms confirmation: LedgerStore.Confirmation? = nil,
        contacts contactChange: LedgerStore.ContactChange? = nil, contactKey: LedgerStore.ContactKeySeed? = nil
    ) throws -> LedgerEntry {
        precondition(lock != nil, "a wallet opened for reading was asked to append")
        if let lockReason { throw WalletError(.locked, "the wallet is locked and refuses to spend: \(lockReason)") }
        // A wallet that cannot sign at all (recovered, not yet rotated) says so before anything about its clock.
        _ = try signer
        let time = try nextEntryTime()
        let entry = try build(state.size, state.head, time)
        let next = try state.applying(entry)
        var nextPeaks = peaks
        nextPeaks.append(leafHash: Merkle.leafHash(entry.encoded))
        // A debit's transfer id is its statement's id; its row is written with the debit.
        let sends = outgoing == nil ? nil : entry.statement.map { TransferID($0.id) }
        precondition(outgoing == nil || sends != nil, "a transfer is sent only with a debit that records it")
        var sealed: SignedCheckpoint?
        precondition(contactKey == nil || entry.kind == .keyEvent, "a contact key's seed comes with its key event")
        try store.append(
            [entry], treePeaks: nextPeaks, sends: sends, confirms: confirmation, consumes: readyRecord,
            contacts: contactChange, contactKey: contactKey
        ) { index in
            let signed = try sign(state: next, root: nextPeaks.root, time: time, index: index)
            sealed = signed
            let sent = try outgoing?(entry, signed)
            // A deliberately broken variant for the simulator's own tests: the anchor moves before the commit.
            if faultHooks?.anchorBeforeCommit == true { try anchor.store(signed.encoded) }
            try faultHooks?.beforeCommit?()
            return LedgerStore.Seal(checkpoint: signed.encoded, outgoing: sent)
        }
        guard let signed = sealed else { preconditionFailure("a committed append was sealed") }
        try faultHooks?.afterCommit?()
        state = next
        peaks = nextPeaks
        latest = signed
        // The anchor moves only after the commit is durable. The entry is committed whatever happens now,
        // so a failure here must not be reported as a failed append (a payer would believe nothing moved):
        // the database is then ahead of the anchor by verified entries, the next append tries again, and
        // the next open moves the anchor forward.
        do {
            try anchor.store(signed.encoded)
            anchorLag = nil
        } catch {
            anchorLag = "\(error)"
        }
        return entry
    }

    /// Signs the checkpoint of `state` inside an append's transaction, over the index D the store computed with
    /// the append's rows. The tables must first be the ones the latest checkpoint committed to: rows rewritten
    /// while this wallet was open (its lock keeps out other writers, not the database key) lock it instead of
    /// being signed over.
    func sign(state: LedgerState, root: Digest32, time: Int64, index: LedgerStore.IndexChange) throws
        -> SignedCheckpoint
    {
        if let latest, index.before != latest.checkpoint.index {
            lockReason = .indexMismatch
            throw WalletError(.locked, "the wallet is locked and refuses to spend: \(WalletLockReason.indexMismatch)")
        }
        let checkpoint = try Checkpoint(
            walletID: walletID, walletKey: signingKey, keySequence: keyEvent.event.sequence,
            keyEventPosition: keyEvent.event.ledgerPosition, state: state, root: root, time: time,
            index: index.after)
        return try checkpoint.sign(with: try signer)
    }

    /// Takes on what a durable commit wrote (for `appendBatch`, whose properties are private here).
    func commit(state: LedgerState, peaks: MerkleCompactRange, latest: SignedCheckpoint) {
        self.state = state
        self.peaks = peaks
        self.latest = latest
    }

    /// The time the next entry gets: the clock, or the last entry's time while the clock is behind it
    /// (entry times never go backwards, and staying in the last entry's budget windows is the cautious
    /// side). A clock more than `clockJumpMillisecondsMax` past the last entry is refused, before anything
    /// is signed, unless `acceptsClockJump`.
    func nextEntryTime() throws -> Int64 {
        let now = clock()
        guard state.size > 0, now > state.lastTime else { return max(now, state.lastTime) }
        let ahead = now - state.lastTime // cannot overflow: 0 ≤ lastTime < now
        guard ahead <= Self.clockJumpMillisecondsMax || acceptsClockJump else {
            let last = ISO8601DateFormatter().string(
                from: Date(timeIntervalSince1970: Double(state.lastTime) / 1000))
            throw WalletError(
                .refused,
                "the clock is \(ahead / 86_400_000) days ahead of the last entry (dated \(last)), more than the "
                    + "\(Self.clockJumpMillisecondsMax / 86_400_000) days an entry may move on unasked; entries "
                    + "never go back in time, so every later entry would be dated by this clock. If the clock is "
                    + "right (the wallet was not used for that long), run the command again with --accept-clock; "
                    + "otherwise set the clock right. Nothing was signed")
        }
        return now
    }

    /// The time budgets are counted at: the next entry's time, or the last entry's while the clock is
    /// refused, so a clock too far ahead never opens (nor shows) a new budget window.
    var budgetTime: Int64 { (try? nextEntryTime()) ?? state.lastTime }

    /// The budget verdict for a payment, before any PIN or signature.
    public func budgetVerdict(category: String, amount: Money) throws -> BudgetVerdict? {
        try state.budgetVerdict(category: category, payment: amount, time: budgetTime)
    }

    /// The number of entries.
    public var size: UInt64 { state.size }

    /// The store, for reading commands.
    public var ledger: LedgerStore { store }

    /// Where the anchor is kept: "token" or "file".
    public var anchorKind: String { anchor.kind }
}

/// An error of the wallet's own rules (as opposed to the token's or the store's).
public typealias WalletError = CodedFailure<WalletErrorCode>

/// Stable codes for `WalletError`.
public enum WalletErrorCode: String, FailureCode, CaseIterable {
    case locked, keyMismatch = "key-mismatch", verificationFailed = "verification-failed", invalidInput =
        "invalid-input"
    case refused, notFound = "not-found"
    /// The key event in force names no contact key (a wallet from before contact keys): one rotation adds one.
    case noContactKey = "no-contact-key"

    /// The documented exit code's kind for each code.
    public var kind: FailureKind {
        switch self {
        case .locked, .verificationFailed, .keyMismatch: .integrity
        case .invalidInput: .usage
        case .refused, .notFound, .noContactKey: .refused
        }
    }
}

extension Wallet {
    /// The budget's window that contains now (the time the next entry would get).
    public func currentWindow(of budget: Budget) throws -> BudgetWindow {
        try budget.window(containing: budgetTime)
    }

    /// What was spent in the budget's window that contains now.
    public func spent(in budget: Budget) throws -> Money {
        let now = budgetTime
        if let total = state.windowTotals[budget.category], total.window.contains(now) { return total.spent }
        return .zero(budget.limit.currency)
    }
}
