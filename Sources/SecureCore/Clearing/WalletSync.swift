import SecureCrypto

/// What the clearing keeps of one wallet between syncs (docs/CLEARING.md §2.1, §2.3): the wallet's key-event
/// log as followed, its last cosigned signed checkpoint, the Merkle compact range at that size, the chain head
/// h(size−1), and the money-only ledger state there. `encoded` is stable: the service stores it in a bytea
/// column and resumes from it.
public struct WalletSyncState: Hashable, Sendable {
    /// The wallet's key-event log, verified from its inception.
    public let log: KeyEventLog
    /// The last cosigned checkpoint: the next sync starts at its size.
    public let checkpoint: SignedCheckpoint
    /// The compact range of the leaves 0 … size−1; its root is the checkpoint's.
    public let range: MerkleCompactRange
    /// h(size−1): the checkpoint's head.
    public let head: Digest32
    /// The money-only state after the entries 0 … size−1.
    public let money: LedgerState

    /// Collects the parts; the verifier makes them agree (size, root, head), a decoder checks they do.
    public init(
        log: KeyEventLog, checkpoint: SignedCheckpoint, range: MerkleCompactRange, head: Digest32, money: LedgerState
    ) {
        self.log = log
        self.checkpoint = checkpoint
        self.range = range
        self.head = head
        self.money = money
    }

    /// The wallet's id.
    public var walletID: WalletID { log.walletID }
    /// The cosigned size: where the next sync starts.
    public var size: UInt64 { checkpoint.checkpoint.size }

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1

    /// version u8 (1) ‖ key-event log ‖ signed checkpoint ‖ range size u64 ‖ u8 peak count ‖ peaks ‖ head 32 ‖
    /// money-only state (`LedgerState.moneyOnlyEncoded`).
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.encodingVersion)
        log.encode(into: &writer)
        checkpoint.encode(into: &writer)
        writer.write(range.size)
        writer.write(UInt8(range.peaks.count))
        for peak in range.peaks { writer.write(peak) }
        writer.write(head)
        writer.write(raw: money.moneyOnlyEncoded)
        return writer.bytes
    }

    /// Decodes a stored state that fills `bytes` exactly: nil when short, throws when malformed or when its
    /// parts disagree (size, root, head).
    public static func decode(_ bytes: [UInt8]) throws -> WalletSyncState? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "wallet sync state"),
            let log = try KeyEventLog.decode(from: &reader),
            let checkpoint = try SignedCheckpoint.decode(from: &reader),
            let size = reader.readUInt64(), let peakCount = reader.readUInt8()
        else { return nil }
        guard peakCount <= 64 else { throw FormatError(.fieldTooLong, "\(peakCount) peaks") }
        var peaks: [Digest32] = []
        for _ in 0..<peakCount {
            guard let peak = reader.read(Digest32.self) else { return nil }
            peaks.append(peak)
        }
        guard let head = reader.read(Digest32.self), let money = try LedgerState.decodeMoneyOnly(from: &reader) else {
            return nil
        }
        try reader.expectEnd("wallet sync state")
        let range = try MerkleCompactRange(size: size, peaks: peaks)
        let signed = checkpoint.checkpoint
        guard signed.walletID == log.walletID, signed.size == size, range.root == signed.root, signed.head == head,
            money.size == size, money.head == head
        else { throw FormatError(.invalidValue, "a wallet sync state's parts disagree") }
        return WalletSyncState(log: log, checkpoint: checkpoint, range: range, head: head, money: money)
    }
}

/// Why a sync is refused: nothing of it is kept (docs/CLEARING.md §2.3, §3.4).
public enum SyncRefusalCode: CaseNameCode {
    /// The chunk or claim names another wallet (or issuer) than the sync's.
    case wrongWallet
    /// A chunk or the claim carries another session than the sync's first chunk.
    case sessionMismatch
    /// A chunk does not start where the previous one ended (the first at the cosigned size).
    case wrongPosition
    /// The key events do not verify from the inception, do not hash to the wallet id, or do not continue the
    /// followed log.
    case logInvalid
    /// A peer log in a chunk does not verify as the log of the wallet id it names.
    case peerLogInvalid
    /// A whole key-event entry is not the log's event at its position.
    case keyEventMismatch
    /// A whole entry does not link to the chain's head or is dated before the entry it follows.
    case brokenChain
    /// A statement check needs a log or transfer that neither the chunks nor the store hold.
    case missingSource
    /// The claim comes before any chunk, or the checkpoint is not of the size the chunks reached.
    case incomplete
    /// The checkpoint is not the wallet's, signed by its key in force at its size.
    case checkpointInvalid
    /// The claim is not signed by the key in force at its size, or does not cover this sync's range.
    case claimInvalid
    /// The opaque map does not hash to the claim's digest or does not list exactly the entries sent opaque.
    case opaqueMapMismatch
    /// The consistency proof does not lead from the cosigned checkpoint to the new one.
    case consistencyInvalid
    /// The leaves sent do not give the checkpoint's root and head.
    case notCommitted
    /// The replay does not reach the checkpoint, but the evidence the clearing holds proves nothing.
    case replayMismatch
    /// A chunk or claim arrived after the sync ended.
    case ended
}

/// A refused sync: a stable code and a sentence.
public struct SyncRefusal: Hashable, Sendable, Error {
    public let code: SyncRefusalCode
    public let reason: String

    public init(_ code: SyncRefusalCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// One verified whole entry of a sync, with the signed transfer a payment out carries.
public struct VerifiedSyncEntry: Hashable, Sendable {
    /// The entry (its position is `entry.position`).
    public let entry: LedgerEntry
    /// The signed transfer, for a payment out.
    public let transfer: SignedTransfer?
}

/// What an accepted sync gives the store.
public struct SyncAcceptance: Hashable, Sendable {
    /// The state to store for the next sync (the new checkpoint, once cosigned).
    public let state: WalletSyncState
    /// The whole entries of s₀ … s₁−1, in order, verified: the debits, credits, reversals, confirmations,
    /// mints and redemptions the cross-wallet records are made from.
    public let entries: [VerifiedSyncEntry]
    /// Payer checkpoints found inside the transfers of this wallet's credits: held checkpoints of the payers
    /// (types 1, 2 and 6 when they sync).
    public let heldCheckpoints: [SignedCheckpoint]
    /// The wallet's claim and the opaque map it signs, kept for type 7 evidence later.
    public let claim: ClaimedMap
    /// Every entry of the sync as sent (whole and opaque), kept for type 7 evidence later.
    public let sent: [SyncEntry]
}

/// What a sync came to.
public enum SyncOutcome: Hashable, Sendable {
    /// Every check holds.
    case accepted(SyncAcceptance)
    /// Refused with a code; nothing of the sync is kept.
    case refused(SyncRefusal)
    /// Proven evidence against the wallet (types 1, 3, 4 or 7): keep it, list the wallet.
    case evidence(ForkEvidence)
}

/// What a chunk came to: accepted (the next chunk starts at `next`), or the sync ends.
public enum SyncChunkVerdict: Hashable, Sendable {
    case accepted(next: UInt64)
    case refused(SyncRefusal)
    case evidence(ForkEvidence)
}

/// What the clearing already holds of a wallet's history before s₀, for type 7 evidence of a later sync.
public struct SyncHistory: Hashable, Sendable {
    /// Entries 0 … s₀−1 as they were sent.
    public let entries: [SyncEntry]
    /// The claims of the earlier syncs, chained from 0 to s₀.
    public let claims: [ClaimedMap]
    /// The signed transfers of the earlier whole payments out.
    public let sentTransfers: [SignedTransfer]

    public init(entries: [SyncEntry], claims: [ClaimedMap], sentTransfers: [SignedTransfer]) {
        self.entries = entries
        self.claims = claims
        self.sentTransfers = sentTransfers
    }
}

/// The per-wallet verification of one sync (docs/CLEARING.md §2.3): chunks in order, then the claim. Pure:
/// the caller stores chunks' results and the accepted state. A client's fault is a refusal or evidence,
/// never a thrown error.
public struct WalletSync {
    /// The wallet syncing.
    public let walletID: WalletID
    /// The clearing's issuer.
    public let issuer: WalletID
    private let start: WalletSyncState?
    private let prior: SyncHistory?
    private let held: [SignedCheckpoint]
    private let sources: SourceBox
    private var log: KeyEventLog?
    private var session: SyncSessionID?
    private var range: MerkleCompactRange
    private var replay: MoneyReplay?
    private var next: UInt64
    private var sent: [SyncEntry] = []
    private var verified: [VerifiedSyncEntry] = []
    private var heldFound: [SignedCheckpoint] = []
    private var opaquePositions: [UInt64] = []
    private var ended = false

    /// Lookups shared with the statement checks, which take closures.
    private final class SourceBox {
        let known: (WalletID) -> KeyEventLog?
        var chunkLogs: [WalletID: KeyEventLog] = [:]
        var transfers: [TransferID: SignedTransfer] = [:]

        init(known: @escaping (WalletID) -> KeyEventLog?) { self.known = known }

        func log(_ id: WalletID) -> KeyEventLog? { chunkLogs[id] ?? known(id) }
    }

    /// The first sync of `walletID` (s₀ = 0): its log comes from the first chunk. `knownLog` gives the logs
    /// the store holds (the issuer's, admitted wallets'); `held` the checkpoints of this wallet it holds
    /// (payer checkpoints from payees' credits).
    public init(
        first walletID: WalletID, issuer: WalletID, knownLog: @escaping (WalletID) -> KeyEventLog?,
        held: [SignedCheckpoint] = []
    ) {
        self.walletID = walletID
        self.issuer = issuer
        start = nil
        prior = nil
        self.held = held
        sources = SourceBox(known: knownLog)
        range = MerkleCompactRange()
        next = 0
    }

    /// A later sync from the stored `state`. `history` is what the store keeps of entries 0 … s₀−1 (for type 7
    /// evidence; without it a replay mismatch is refused with `replayMismatch` instead).
    public init(
        resuming state: WalletSyncState, issuer: WalletID, knownLog: @escaping (WalletID) -> KeyEventLog?,
        held: [SignedCheckpoint] = [], history: SyncHistory? = nil
    ) {
        walletID = state.walletID
        self.issuer = issuer
        start = state
        prior = history
        self.held = held
        sources = SourceBox(known: knownLog)
        log = state.log
        range = state.range
        next = state.size
        replay = MoneyReplay(
            log: state.log, sources: Self.statementSources(walletID: walletID, issuer: issuer, box: sources),
            issuer: issuer, state: state.money)
    }

    private static func statementSources(walletID: WalletID, issuer: WalletID, box: SourceBox) -> StatementSources {
        StatementSources(
            walletID: walletID, trustedIssuers: [issuer], peerLog: { box.log($0) },
            sentTransfer: { box.transfers[$0] })
    }

    /// Checks one chunk, in order. After a refusal or evidence the sync is over.
    public mutating func accept(_ chunk: SyncChunk) -> SyncChunkVerdict {
        guard !ended else { return .refused(SyncRefusal(.ended, "the sync has ended")) }
        let verdict = check(chunk)
        if case .accepted = verdict { return verdict }
        ended = true
        return verdict
    }

    private mutating func check(_ chunk: SyncChunk) -> SyncChunkVerdict {
        guard chunk.walletID == walletID else {
            return .refused(SyncRefusal(.wrongWallet, "the chunk names wallet \(chunk.walletID.hex)"))
        }
        if let session, session != chunk.session {
            return .refused(SyncRefusal(.sessionMismatch, "the chunk belongs to another session"))
        }
        session = chunk.session
        guard chunk.firstPosition == next else {
            return .refused(
                SyncRefusal(.wrongPosition, "the chunk starts at \(chunk.firstPosition), not at \(next)"))
        }
        if let verdict = followKeyEvents(chunk.keyEvents) { return verdict }
        for peer in chunk.peerLogs {
            guard let verified = peer.verified else {
                return .refused(SyncRefusal(.peerLogInvalid, "the log of peer \(peer.walletID.hex) does not verify"))
            }
            sources.chunkLogs[peer.walletID] = verified
        }
        for entry in chunk.entries {
            if let refusal = add(entry) { return .refused(refusal) }
        }
        return .accepted(next: next)
    }

    /// The first chunk's events are the log from its inception; later ones continue the followed log.
    private mutating func followKeyEvents(_ events: [SignedKeyEvent]) -> SyncChunkVerdict? {
        guard var followed = log else {
            guard let verified = try? KeyEventLog(verifying: events, walletID: walletID) else {
                return .refused(
                    SyncRefusal(.logInvalid, "the key events do not verify from an inception of this wallet id"))
            }
            log = verified
            replay = MoneyReplay(
                log: verified, sources: Self.statementSources(walletID: walletID, issuer: issuer, box: sources),
                issuer: issuer)
            return nil
        }
        guard let first = events.first else { return nil }
        let keep = Int(min(first.event.sequence, UInt64(followed.events.count)))
        switch followed.follow(Array(followed.events.prefix(keep)) + events) {
        case .followed:
            log = followed
            replay = replay.map { MoneyReplay(log: followed, sources: $0.sources, issuer: issuer, state: $0.state) }
            return nil
        case .refused(let error):
            return .refused(SyncRefusal(.logInvalid, "the key events do not continue the log: \(error.message)"))
        case .conflict(let conflict):
            let evidence = ForkEvidence(.conflictingKeyEvents(conflict), log: followed)
            guard evidence.verify().isProven else {
                return .refused(SyncRefusal(.logInvalid, "the key events conflict with the followed log"))
            }
            return .evidence(evidence)
        }
    }

    private mutating func add(_ entry: SyncEntry) -> SyncRefusal? {
        // `replay` and `log` are set by the chunk's key events before any entry.
        guard var replay, let log else { preconditionFailure("entries come after the log") }
        if case .whole(let whole, let transfer) = entry {
            guard whole.previousLink == replay.state.head, whole.time >= replay.state.lastTime else {
                return SyncRefusal(.brokenChain, "entry \(whole.position) does not continue the chain")
            }
            if whole.kind == .keyEvent {
                guard
                    let event = log.events.first(where: { $0.event.ledgerPosition == whole.position }),
                    whole.payload == event.encoded || whole.payload == event.event.encoded
                else {
                    return SyncRefusal(
                        .keyEventMismatch, "entry \(whole.position) is not the log's key event at its position")
                }
            }
            if let transfer { sources.transfers[transfer.payload.order.transferID] = transfer }
            if let missing = MoneyReplay.missingSource(whole, replay.sources) {
                return SyncRefusal(.missingSource, "entry \(whole.position) (\(whole.kind)): \(missing)")
            }
            if whole.kind == .paymentIn, let credit = (try? SignedTransfer.decode(whole.payload)) ?? nil {
                heldFound.append(credit.payload.checkpoint)
            }
            verified.append(VerifiedSyncEntry(entry: whole, transfer: transfer))
        } else if case .opaque(let leaf) = entry {
            opaquePositions.append(leaf.position)
        }
        replay.add(entry)
        self.replay = replay
        range.append(leafHash: entry.leafHash)
        sent.append(entry)
        next += 1
        return nil
    }

    /// Closes the sync with the wallet's signed claim, its signed checkpoint of size s₁, the consistency
    /// proof from the cosigned checkpoint (empty on a first sync) and the opaque map.
    public mutating func close(
        claim: SignedSyncClaim, checkpoint: SignedCheckpoint, consistencyProof: [Digest32], opaqueMap: OpaqueMap
    ) -> SyncOutcome {
        guard !ended else { return .refused(SyncRefusal(.ended, "the sync has ended")) }
        ended = true
        guard let log, let replay, let session else {
            return .refused(SyncRefusal(.incomplete, "no chunk was accepted before the claim"))
        }
        if let outcome = checkCheckpoint(checkpoint, log: log) { return outcome }
        if let refusal = checkClaim(claim, checkpoint: checkpoint, log: log, session: session, map: opaqueMap) {
            return .refused(refusal)
        }
        let signed = checkpoint.checkpoint
        if let start {
            let old = start.checkpoint.checkpoint
            guard
                Merkle.verifyConsistency(
                    oldSize: old.size, newSize: signed.size, oldRoot: old.root, newRoot: signed.root,
                    proof: consistencyProof)
            else {
                return .refused(
                    SyncRefusal(.consistencyInvalid, "the proof does not lead from the cosigned checkpoint"))
            }
        }
        guard range.root == signed.root, replay.state.head == signed.head else {
            return .refused(SyncRefusal(.notCommitted, "the entries sent do not give the checkpoint's root and head"))
        }
        if let (finding, reason) = replay.finding ?? replay.balanceFinding(signed) {
            return replayEvidence(checkpoint, claim: ClaimedMap(claim: claim, map: opaqueMap), log: log)
                ?? .refused(SyncRefusal(.replayMismatch, "\(finding.rawValue): \(reason)"))
        }
        let state = WalletSyncState(
            log: log, checkpoint: checkpoint, range: range, head: signed.head, money: replay.state)
        return .accepted(
            SyncAcceptance(
                state: state, entries: verified, heldCheckpoints: heldFound,
                claim: ClaimedMap(claim: claim, map: opaqueMap), sent: sent))
    }

    /// The checkpoint: this wallet's, signed by its key in force (a retired key's is type 4), of the size the
    /// chunks reached, and equal to any held checkpoint of that size (else type 1).
    private func checkCheckpoint(_ checkpoint: SignedCheckpoint, log: KeyEventLog) -> SyncOutcome? {
        let signed = checkpoint.checkpoint
        guard signed.walletID == walletID, checkpoint.isSelfConsistent else {
            return .refused(
                SyncRefusal(.checkpointInvalid, "the checkpoint is not this wallet's or its signature fails"))
        }
        switch log.check(checkpoint) {
        case .inForce: break
        case .retired(let rotation):
            let evidence = ForkEvidence(
                .retiredKeySignature(
                    RetiredKeySignature(
                        retiredEvent: log.events[Int(signed.keySequence)], rotation: rotation, checkpoint: checkpoint)),
                log: log)
            if evidence.verify().isProven { return .evidence(evidence) }
            return .refused(SyncRefusal(.checkpointInvalid, "the checkpoint's key was retired"))
        case .unknown, .beforeInForce:
            return .refused(SyncRefusal(.checkpointInvalid, "the checkpoint's key is not in force at its size"))
        }
        guard signed.size == next else {
            return .refused(
                SyncRefusal(.incomplete, "the checkpoint has \(signed.size) entries; the chunks reached \(next)"))
        }
        for other in held + [start?.checkpoint].compactMap({ $0 }) where other.checkpoint.size == signed.size {
            if other.checkpoint.root != signed.root || other.checkpoint.head != signed.head {
                let evidence = ForkEvidence(.conflictingCheckpoints(other, checkpoint), log: log)
                if evidence.verify().isProven { return .evidence(evidence) }
            }
        }
        return nil
    }

    private func checkClaim(
        _ claim: SignedSyncClaim, checkpoint: SignedCheckpoint, log: KeyEventLog, session: SyncSessionID,
        map: OpaqueMap
    ) -> SyncRefusal? {
        let payload = claim.payload
        guard payload.walletID == walletID, payload.issuer == issuer else {
            return SyncRefusal(.wrongWallet, "the claim names another wallet or issuer")
        }
        guard payload.session == session else {
            return SyncRefusal(.sessionMismatch, "the claim belongs to another session")
        }
        guard claim.isSignatureValid, log.check(key: payload.walletKey, date: payload.keyDate) == .inForce,
            payload.fromSize == (start?.size ?? 0), payload.toSize == checkpoint.checkpoint.size
        else {
            return SyncRefusal(.claimInvalid, "the claim is not signed by the key in force for this sync's range")
        }
        guard map.digest == payload.opaqueMapDigest, map.items.map(\.position) == opaquePositions else {
            return SyncRefusal(.opaqueMapMismatch, "the opaque map is not the claim's or not the entries sent opaque")
        }
        return nil
    }

    /// Type 7 from the whole history (the first sync, or a later one with `history`), when it proves.
    private func replayEvidence(_ checkpoint: SignedCheckpoint, claim: ClaimedMap, log: KeyEventLog) -> SyncOutcome? {
        guard start == nil || prior != nil else { return nil }
        let entries = (prior?.entries ?? []) + sent
        var transfers = prior?.sentTransfers ?? []
        transfers += verified.compactMap(\.transfer)
        var peers: [WalletID] = []
        for case .whole(let entry, _) in entries {
            if let peer = WalletID(bytes: entry.counterparty), peer != issuer, !peers.contains(peer) {
                peers.append(peer)
            }
        }
        let mismatch = ReplayMismatch(
            checkpoint: checkpoint, entries: entries, claims: (prior?.claims ?? []) + [claim],
            issuerLogs: sources.log(issuer).map { [$0.events] } ?? [],
            peerLogs: peers.compactMap { id in sources.log(id).map(PeerLog.init) }, sentTransfers: transfers,
            assetIssuer: issuer)
        let evidence = ForkEvidence(.replayMismatch(mismatch), log: log)
        guard evidence.verify().isProven, evidence.encoded.count <= ClearingLimits.evidenceReplayByteCountMax
        else { return nil }
        return .evidence(evidence)
    }
}
