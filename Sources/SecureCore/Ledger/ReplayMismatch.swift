import SecureCrypto

extension ClearingLimits {
    /// Type 7 evidence carries a wallet's whole history up to a checkpoint; 64 MiB holds about a thousand
    /// full-size entries or a hundred thousand ordinary ones, and is a file and HTTP limit only: type 7 is
    /// never sent in a peer session (docs/CLEARING.md §2.5 and §7, question 4).
    public static let evidenceReplayByteCountMax = 67_108_864
    /// Claims in one type 7 evidence: one per sync, and a wallet that synced more than 1,024 times between
    /// two cosignatures the evidence needs is refused before it could (docs/CLEARING.md §2.5).
    public static let evidenceClaimCountMax = 1024
    /// Logs of issuers or peers carried by type 7 evidence: one per counterparty named by a whole entry.
    public static let evidenceLogCountMax = 65_535
    /// Sent transfers carried by type 7 evidence: one per whole payment out.
    public static let evidenceTransferCountMax = 1_048_576
}

/// One sync claim with the opaque map it signs the digest of.
public struct ClaimedMap: Hashable, Sendable {
    /// The wallet's signed claim.
    public let claim: SignedSyncClaim
    /// The positions it sent opaque, with their classes.
    public let map: OpaqueMap

    public init(claim: SignedSyncClaim, map: OpaqueMap) {
        self.claim = claim
        self.map = map
    }
}

/// Evidence type 7 (docs/CLEARING.md §2.5): the accused wallet signed checkpoint C of size n and claims
/// covering every entry it did not show, yet the history C commits to does not lead to C's state: a replay
/// rule is broken, a money statement does not verify against the logs that decide it, or the replayed
/// balances of `assetIssuer`'s assets are not C's.
public struct ReplayMismatch: Hashable, Sendable {
    /// C.
    public let checkpoint: SignedCheckpoint
    /// Entries 0 … n−1: whole (`SyncEntry.whole(entry, nil)`; transfers travel in `sentTransfers`) or opaque.
    public let entries: [SyncEntry]
    /// The wallet's claims, chained from size 0 to n, with their maps.
    public let claims: [ClaimedMap]
    /// The logs of the issuers whose vouchers the whole deposits carry.
    public let issuerLogs: [[SignedKeyEvent]]
    /// The logs of the peers the whole entries name.
    public let peerLogs: [PeerLog]
    /// The signed transfers of the whole payments out.
    public let sentTransfers: [SignedTransfer]
    /// The issuer whose assets are compared.
    public let assetIssuer: WalletID

    /// Collects the parts; nothing is checked until `verify`.
    public init(
        checkpoint: SignedCheckpoint, entries: [SyncEntry], claims: [ClaimedMap], issuerLogs: [[SignedKeyEvent]],
        peerLogs: [PeerLog], sentTransfers: [SignedTransfer], assetIssuer: WalletID
    ) {
        self.checkpoint = checkpoint
        self.entries = entries.map {
            if case .whole(let entry, _) = $0 { return .whole(entry, nil) }
            return $0
        }
        self.claims = claims
        self.issuerLogs = issuerLogs
        self.peerLogs = peerLogs
        self.sentTransfers = sentTransfers
        self.assetIssuer = assetIssuer
    }

    /// The stable codes of the type 7 verdicts (docs/CLEARING.md §2.5).
    public enum Finding: String, Hashable, Sendable {
        case ruleBroken = "rule-broken"
        case statementInvalid = "statement-invalid"
        case balanceMismatch = "balance-mismatch"
    }

    /// The verdict, first failing check wins (§2.5 steps 1–4). A proven verdict's sentence starts with the
    /// finding's code ("balance-mismatch: …").
    func verify(log: KeyEventLog) -> ForkVerdict {
        if let refusal = checkCheckpoint(log: log) { return refusal }
        if let refusal = checkClaims(log: log) { return refusal }
        if let refusal = checkCommitted() { return refusal }
        var logs: [WalletID: KeyEventLog] = [:]
        for events in issuerLogs {
            if let issuerLog = try? KeyEventLog(verifying: events) { logs[issuerLog.walletID] = issuerLog }
        }
        for peer in peerLogs { if let peerLog = peer.verified { logs[peer.walletID] = peerLog } }
        var sent: [TransferID: SignedTransfer] = [:]
        for transfer in sentTransfers { sent[transfer.payload.order.transferID] = transfer }
        let sources = StatementSources(
            walletID: log.walletID, trustedIssuers: [assetIssuer], peerLog: { [logs] in logs[$0] },
            sentTransfer: { [sent] in sent[$0] })
        var replay = MoneyReplay(log: log, sources: sources, issuer: assetIssuer)
        for entry in entries { replay.add(entry) }
        if let (finding, reason) = replay.finding ?? replay.balanceFinding(checkpoint.checkpoint) {
            return .forkProven("\(finding.rawValue): \(reason)")
        }
        if let missing = replay.missingSource { return .notProven(.missingSource, missing) }
        return .notProven(
            .noConflict, "the replay of the \(entries.count) entries leads to the checkpoint's balances of the issuer")
    }

    private func checkCheckpoint(log: KeyEventLog) -> ForkVerdict? {
        let signed = checkpoint.checkpoint
        guard signed.walletID == log.walletID else {
            return .notProven(.wrongLog, "the key-event log is not the wallet's the checkpoint names")
        }
        guard checkpoint.isSelfConsistent else {
            return .notProven(.badSignature, "the checkpoint's signature does not verify under the key it names")
        }
        guard log.check(checkpoint) == .inForce else {
            return .notProven(.keyNotInForce, "the checkpoint's key was not the wallet's key in force at its size")
        }
        return nil
    }

    /// Step 2: claims chain from 0 to n, each signed by the key in force at its size, each map hashing to its
    /// claim's digest and listing exactly the opaque entries of its range.
    private func checkClaims(log: KeyEventLog) -> ForkVerdict? {
        let size = checkpoint.checkpoint.size
        let opaque = entries.compactMap { entry -> UInt64? in
            if case .opaque(let leaf) = entry { return leaf.position }
            return nil
        }
        if claims.isEmpty && opaque.isEmpty { return nil }
        var from: UInt64 = 0
        var covered: [UInt64] = []
        for (index, claimed) in claims.enumerated() {
            let claim = claimed.claim.payload
            guard claimed.claim.isSignatureValid, claim.walletID == log.walletID, claim.issuer == assetIssuer,
                log.check(key: claim.walletKey, date: claim.keyDate) == .inForce
            else {
                return .notProven(
                    .claimMissing, "claim \(index) is not signed by the wallet's key in force for this issuer")
            }
            guard claim.fromSize == from, claimed.map.digest == claim.opaqueMapDigest,
                claimed.map.items.allSatisfy({ $0.position >= claim.fromSize && $0.position < claim.toSize })
            else {
                return .notProven(
                    .claimMissing, "claim \(index) does not continue the claims before it or its map is not its own")
            }
            covered += claimed.map.items.map(\.position)
            from = claim.toSize
        }
        guard from == size, covered == opaque else {
            return .notProven(
                .claimMissing, "the claims do not cover exactly the opaque entries of the \(size) entries")
        }
        return nil
    }

    /// Step 3: the chain links and the leaf hashes lead to C's head and root.
    private func checkCommitted() -> ForkVerdict? {
        let signed = checkpoint.checkpoint
        guard UInt64(entries.count) == signed.size else {
            return .notProven(.notCommitted, "\(entries.count) entries for a checkpoint of \(signed.size)")
        }
        var head = LedgerChain.genesisLink
        var range = MerkleCompactRange()
        for (offset, entry) in entries.enumerated() {
            switch entry {
            case .whole(let whole, _):
                guard whole.position == UInt64(offset), whole.previousLink == head else {
                    return .notProven(.notCommitted, "entry \(offset) is out of place or does not link")
                }
                head = whole.link
            case .opaque(let leaf):
                guard leaf.position == UInt64(offset) else {
                    return .notProven(.notCommitted, "entry \(offset) is out of place")
                }
                head = LedgerChain.link(previous: head, position: leaf.position, entryDigest: leaf.digest, id: leaf.id)
            }
            range.append(leafHash: entry.leafHash)
        }
        guard head == signed.head, range.root == signed.root else {
            return .notProven(.notCommitted, "the entries do not give the checkpoint's chain head and root")
        }
        return nil
    }

    /// Entry count u32 ‖ entries ‖ claims ‖ issuer logs ‖ peer logs ‖ sent transfers ‖ asset issuer.
    func encode(into writer: inout ByteWriter) {
        checkpoint.encode(into: &writer)
        writer.write(UInt32(entries.count))
        for entry in entries {
            switch entry {
            case .whole(let whole, _):
                writer.write(UInt8(1))
                writer.write(prefixed32: whole.encoded, max: ConflictingLeaves.leafByteCountMax)
            case .opaque(let leaf):
                writer.write(UInt8(2))
                leaf.encode(into: &writer)
            }
        }
        precondition(claims.count <= ClearingLimits.evidenceClaimCountMax)
        writer.write(UInt16(claims.count))
        for claimed in claims {
            writer.write(prefixed16: claimed.claim.encoded, max: Self.signedClaimByteCountMax)
            writer.write(prefixed32: claimed.map.encoded, max: Self.mapByteCountMax)
        }
        writer.write(UInt16(issuerLogs.count))
        for events in issuerLogs { SignedKeyEventList.encode(events, into: &writer) }
        writer.write(UInt16(peerLogs.count))
        for peer in peerLogs { peer.encode(into: &writer) }
        writer.write(UInt32(sentTransfers.count))
        for transfer in sentTransfers {
            writer.write(prefixed32: transfer.encoded, max: SyncEntry.signedTransferByteCountMax)
        }
        writer.write(assetIssuer)
    }

    /// 1 + 4 + 218 + 1 + 72.
    static let signedClaimByteCountMax = 1 + 4 + SyncClaim.encodedByteCountMax + 1 + 72
    static let mapByteCountMax = 4 + 9 * ClearingLimits.opaqueMapCountMax

    static func decode(from reader: inout ByteReader) throws -> ReplayMismatch? {
        guard let checkpoint = try SignedCheckpoint.decode(from: &reader), let count = reader.readUInt32() else {
            return nil
        }
        guard UInt64(count) == checkpoint.checkpoint.size else {
            throw FormatError(.invalidValue, "type 7 carries \(count) entries for a checkpoint of another size")
        }
        var entries: [SyncEntry] = []
        for position in 0..<UInt64(count) {
            guard let form = reader.readUInt8() else { return nil }
            switch form {
            case 1:
                guard let bytes = try reader.readPrefixed32(max: ConflictingLeaves.leafByteCountMax, field: "entry")
                else { return nil }
                guard let entry = try LedgerEntry.decode(bytes), entry.encoded == bytes else {
                    throw FormatError(.invalidValue, "entry \(position) is truncated or not canonical")
                }
                entries.append(.whole(entry, nil))
            case 2:
                guard let leaf = OpaqueLeaf.decode(position: position, from: &reader) else { return nil }
                entries.append(.opaque(leaf))
            default:
                throw FormatError(.invalidValue, "entry form \(form) is not 1 (whole) or 2 (opaque)")
            }
        }
        guard let claims = try decodeClaims(from: &reader), let issuerCount = reader.readUInt16() else { return nil }
        var issuerLogs: [[SignedKeyEvent]] = []
        for _ in 0..<issuerCount {
            guard let events = try SignedKeyEventList.decode(from: &reader) else { return nil }
            issuerLogs.append(events)
        }
        guard let peerCount = reader.readUInt16() else { return nil }
        var peerLogs: [PeerLog] = []
        for _ in 0..<peerCount {
            guard let peer = try PeerLog.decode(from: &reader) else { return nil }
            peerLogs.append(peer)
        }
        guard let transferCount = reader.readUInt32() else { return nil }
        guard Int(transferCount) <= ClearingLimits.evidenceTransferCountMax else {
            throw FormatError(.fieldTooLong, "\(transferCount) transfers in type 7 evidence")
        }
        var transfers: [SignedTransfer] = []
        for _ in 0..<transferCount {
            guard let body = try reader.readPrefixed32(max: SyncEntry.signedTransferByteCountMax, field: "transfer")
            else { return nil }
            guard let transfer = try SignedTransfer.decode(body) else {
                throw FormatError(.invalidValue, "a transfer in type 7 evidence is truncated")
            }
            transfers.append(transfer)
        }
        guard let issuer = reader.read(WalletID.self) else { return nil }
        return ReplayMismatch(
            checkpoint: checkpoint, entries: entries, claims: claims, issuerLogs: issuerLogs, peerLogs: peerLogs,
            sentTransfers: transfers, assetIssuer: issuer)
    }

    private static func decodeClaims(from reader: inout ByteReader) throws -> [ClaimedMap]? {
        guard let count = reader.readUInt16() else { return nil }
        guard Int(count) <= ClearingLimits.evidenceClaimCountMax else {
            throw FormatError(.fieldTooLong, "\(count) claims in type 7 evidence")
        }
        var claims: [ClaimedMap] = []
        for _ in 0..<count {
            guard let claimBytes = try reader.readPrefixed16(max: signedClaimByteCountMax, field: "sync claim"),
                let mapBytes = try reader.readPrefixed32(max: mapByteCountMax, field: "opaque map")
            else { return nil }
            guard let claim = try SignedSyncClaim.decode(claimBytes), let map = try OpaqueMap.decode(mapBytes) else {
                throw FormatError(.invalidValue, "a claim or its map in type 7 evidence is truncated")
            }
            claims.append(ClaimedMap(claim: claim, map: map))
        }
        return claims
    }
}

/// The money-only replay shared by the clearing's sync (`WalletSync`) and type 7 evidence: each whole entry
/// is applied to a money-only `LedgerState` and its statement checked; opaque entries advance the chain only.
/// The first rule broken or statement invalid is kept as the finding, and the chain goes on without money.
struct MoneyReplay {
    let log: KeyEventLog
    var sources: StatementSources
    let issuer: WalletID
    var state: LedgerState
    /// The first finding: a rule broken or a statement that does not verify.
    private(set) var finding: (ReplayMismatch.Finding, String)?
    /// The first statement that could not be checked for want of a log or transfer.
    private(set) var missingSource: String?

    init(log: KeyEventLog, sources: StatementSources, issuer: WalletID, state: LedgerState = .moneyOnly()) {
        self.log = log
        self.sources = sources
        self.issuer = issuer
        self.state = state
    }

    mutating func add(_ entry: SyncEntry) {
        switch entry {
        case .opaque(let leaf):
            // The position is the next one: the callers check it first.
            try? state.applyOpaque(position: leaf.position, id: leaf.id, digest: leaf.digest)
        case .whole(let whole, _):
            guard finding == nil else {
                try? state.applyOpaque(position: whole.position, id: whole.id, digest: whole.digest)
                return
            }
            do {
                try state.apply(whole)
            } catch {
                finding = (.ruleBroken, "entry \(whole.position) (\(whole.kind)): \(error)")
                try? state.applyOpaque(position: whole.position, id: whole.id, digest: whole.digest)
                return
            }
            if let missing = Self.missingSource(whole, sources) {
                if missingSource == nil { missingSource = "entry \(whole.position) (\(whole.kind)): \(missing)" }
                return
            }
            if let problem = EntryStatementCheck.problem(whole, encoded: whole.encoded, ownLog: log, sources: sources) {
                finding = (.statementInvalid, problem)
            }
        }
    }

    /// Balance mismatch: the replayed balances of the issuer's assets differ from the checkpoint's.
    func balanceFinding(_ checkpoint: Checkpoint) -> (ReplayMismatch.Finding, String)? {
        var signed: [Asset: Int64] = [:]
        for balance in checkpoint.snapshot.balances where balance.asset.issuer == issuer && !balance.money.isZero {
            signed[balance.asset] = balance.money.minorUnits
        }
        var replayed: [Asset: Int64] = [:]
        for (asset, money) in state.balances where asset.issuer == issuer && !money.isZero {
            replayed[asset] = money.minorUnits
        }
        guard signed != replayed else { return nil }
        return (
            .balanceMismatch,
            "the checkpoint of \(checkpoint.size) entries signs balances of the issuer's assets that its entries "
                + "do not add up to"
        )
    }

    /// What a statement check of `entry` would need and `sources` lack, or nil. A payload that does not decode
    /// needs nothing: its check fails on its own.
    static func missingSource(_ entry: LedgerEntry, _ sources: StatementSources) -> String? {
        func payeeOf(_ id: TransferID) -> String? {
            guard let transfer = sources.sentTransfer(id) else { return "no signed transfer \(id.hex) is carried" }
            let payee = transfer.payload.order.payeeWalletID
            return sources.peerLog(payee) == nil ? "no key-event log of payee \(payee.hex) is carried" : nil
        }
        switch entry.kind {
        case .deposit:
            guard let voucher = (try? SignedVoucher.decode(entry.payload)) ?? nil,
                voucher.payload.issuerWalletID == entry.amount?.issuer
            else { return nil }
            let issuer = voucher.payload.issuerWalletID
            return sources.peerLog(issuer) == nil ? "no key-event log of issuer \(issuer.hex) is carried" : nil
        case .paymentIn, .redemption:
            guard let transfer = (try? SignedTransfer.decode(entry.payload)) ?? nil else { return nil }
            let payer = transfer.payload.order.payerWalletID
            return sources.peerLog(payer) == nil ? "no key-event log of payer \(payer.hex) is carried" : nil
        case .reversal:
            guard let refusal = (try? SignedRefusal.decode(entry.payload)) ?? nil else { return nil }
            return payeeOf(refusal.payload.transferID)
        case .confirmation:
            guard let receipt = (try? SignedReceipt.decode(entry.payload)) ?? nil else { return nil }
            return payeeOf(receipt.payload.transferID)
        case .paymentOut:
            guard let order = (try? TransferOrder.decode(entry.payload)) ?? nil else { return nil }
            return sources.sentTransfer(order.transferID) == nil
                ? "no signed transfer \(order.transferID.hex) is carried" : nil
        case .mint, .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement,
            .settings:
            return nil
        }
    }
}
