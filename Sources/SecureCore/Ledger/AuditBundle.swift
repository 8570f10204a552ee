import SecureCrypto

/// What an auditor needs to check a wallet's history offline, with no token: the key-event log with each
/// event's ledger entry and inclusion proof, a range of entries with inclusion proofs in the checkpoint
/// that ends the range, that checkpoint and the latest one, and the consistency proof between them. The
/// JSON form is in docs/PROTOCOL.md ("Audit bundles").
public struct AuditBundle: Hashable, Sendable {
    /// One entry with its inclusion proof: its encoding, or for an entry whose content must not leave the
    /// wallet (a contact settings entry) only what the chain and the tree need (`OpaqueEntry`).
    public struct ProvenEntry: Hashable, Sendable {
        /// The entry's encoding; empty for an opaque entry.
        public let leaf: [UInt8]
        public let proof: [Digest32]
        /// The entry's position, id, digest, previous link and leaf hash, for an entry carried without content.
        public let opaque: OpaqueEntry?

        public init(leaf: [UInt8], proof: [Digest32]) {
            self.leaf = leaf
            self.proof = proof
            opaque = nil
        }

        /// An entry carried without its content.
        public init(opaque: OpaqueEntry, proof: [Digest32]) {
            leaf = []
            self.proof = proof
            self.opaque = opaque
        }

        /// The Merkle leaf hash the proof starts from.
        var leafHash: Digest32 { opaque?.leafHash ?? Merkle.leafHash(leaf) }
    }

    /// An entry without its content: (position, id, δ, leaf hash) and its previous link h(n−1), enough to
    /// continue the chain (h(n) = SHA-256(τ ‖ h(n−1) ‖ n ‖ δ ‖ id)) and check its inclusion proof. Audit bundles
    /// carry contact settings entries so, so an auditor or an issuer never learns anyone's contacts.
    public struct OpaqueEntry: Hashable, Sendable {
        public let position: UInt64
        public let id: StatementID
        /// δ(n) = SHA-256(encoding).
        public let digest: Digest32
        /// SHA-256(0x00 ‖ encoding).
        public let leafHash: Digest32
        /// h(n−1), as the entry's encoding holds it.
        public let previousLink: Digest32

        /// The parts of `entry` that leave the wallet.
        public init(_ entry: LedgerEntry) {
            position = entry.position
            id = entry.id
            digest = entry.digest
            leafHash = Merkle.leafHash(entry.encoded)
            previousLink = entry.previousLink
        }

        /// The parts as a bundle file gives them.
        public init(position: UInt64, id: StatementID, digest: Digest32, leafHash: Digest32, previousLink: Digest32) {
            self.position = position
            self.id = id
            self.digest = digest
            self.leafHash = leafHash
            self.previousLink = previousLink
        }

        /// h(n).
        public var link: Digest32 {
            LedgerChain.link(previous: previousLink, position: position, entryDigest: digest, id: id)
        }
    }

    /// Whether `entry` leaves the wallet only as an `OpaqueEntry`: a contact settings entry (tags 7–9).
    public static func isOpaque(_ entry: LedgerEntry) -> Bool {
        entry.kind == .settings && (try? SettingsChange.decode(payload: entry.payload))?.isContactChange == true
    }

    public let walletID: WalletID
    public let keyEvents: [SignedKeyEvent]
    /// Each key event's ledger entry, proven in `latest`.
    public let keyEventEntries: [ProvenEntry]
    /// The first position of the range.
    public let from: UInt64
    /// The entries from `from` on, proven in `rangeCheckpoint`; its size is `from + entries.count`.
    public let entries: [ProvenEntry]
    public let rangeCheckpoint: SignedCheckpoint
    public let latest: SignedCheckpoint
    /// RFC 9162 consistency proof from `rangeCheckpoint` to `latest`.
    public let consistencyProof: [Digest32]
    /// What the statement checks of the range's entries need (trusted issuers, peers' logs, sent transfers);
    /// nil in a bundle that carries none, whose entries' statements then go unchecked.
    public var statementContext: StatementContext?

    /// The statement sources a bundle carries, as plain values.
    public struct StatementContext: Hashable, Sendable {
        public let trustedIssuers: Set<WalletID>
        /// Each peer's key-event log, verified from its inception when the bundle is checked.
        public let peerKeyEvents: [WalletID: [SignedKeyEvent]]
        /// The signed transfers this wallet sent, by transfer id.
        public let sentTransfers: [TransferID: SignedTransfer]

        public init(
            trustedIssuers: Set<WalletID>, peerKeyEvents: [WalletID: [SignedKeyEvent]],
            sentTransfers: [TransferID: SignedTransfer]
        ) {
            self.trustedIssuers = trustedIssuers
            self.peerKeyEvents = peerKeyEvents
            self.sentTransfers = sentTransfers
        }

        /// The sources for `walletID`'s entries; a peer log that does not verify counts as missing.
        func sources(walletID: WalletID) -> StatementSources {
            var logs: [WalletID: KeyEventLog] = [:]
            for (id, events) in peerKeyEvents { logs[id] = try? KeyEventLog(verifying: events, walletID: id) }
            return StatementSources(
                walletID: walletID, trustedIssuers: trustedIssuers, peerLog: { [logs] in logs[$0] },
                sentTransfer: { sentTransfers[$0] })
        }
    }

    public init(
        walletID: WalletID, keyEvents: [SignedKeyEvent], keyEventEntries: [ProvenEntry], from: UInt64,
        entries: [ProvenEntry], rangeCheckpoint: SignedCheckpoint, latest: SignedCheckpoint,
        consistencyProof: [Digest32]
    ) {
        self.walletID = walletID
        self.keyEvents = keyEvents
        self.keyEventEntries = keyEventEntries
        self.from = from
        self.entries = entries
        self.rangeCheckpoint = rangeCheckpoint
        self.latest = latest
        self.consistencyProof = consistencyProof
    }

    /// Every check, in order; the problems found (empty when the bundle verifies). Stops at the first
    /// problem that makes later checks meaningless.
    public func verify() -> [String] {
        let log: KeyEventLog
        do {
            log = try KeyEventLog(verifying: keyEvents, walletID: walletID)
        } catch {
            return ["the key-event log does not verify: \(error)"]
        }
        var problems: [String] = []
        for (name, signed) in [("the range checkpoint", rangeCheckpoint), ("the latest checkpoint", latest)] {
            switch log.check(signed) {
            case .inForce: break
            case .retired: problems.append("\(name) is signed by a key after its retirement")
            case .unknown, .beforeInForce:
                problems.append("\(name) is not signed by a key of the log in force at its size")
            }
        }
        if !problems.isEmpty { return problems }
        let end = rangeCheckpoint.checkpoint
        let top = latest.checkpoint
        guard keyEventEntries.count == keyEvents.count else { return ["each key event needs its ledger entry"] }
        for (signed, proven) in zip(keyEvents, keyEventEntries) {
            let position = signed.event.ledgerPosition
            guard let entry = try? LedgerEntry.decode(proven.leaf), entry.kind == .keyEvent, entry.position == position,
                entry.payload == signed.encoded
            else {
                problems.append(
                    "key event \(signed.event.sequence)'s entry is not the key-event entry at position \(position)")
                continue
            }
            if !Merkle.verifyInclusion(
                leafHash: Merkle.leafHash(proven.leaf), index: position, size: top.size,
                proof: proven.proof, root: top.root)
            {
                problems.append("key event \(signed.event.sequence)'s entry is not proven in the latest checkpoint")
            }
        }
        problems += verifyRange(end)
        if let statementContext {
            let sources = statementContext.sources(walletID: walletID)
            for proven in entries where proven.opaque == nil {
                guard let entry = try? LedgerEntry.decode(proven.leaf) else { continue }
                if let problem = EntryStatementCheck.problem(entry, encoded: proven.leaf, ownLog: log, sources: sources)
                {
                    problems.append(problem)
                }
            }
        }
        if !Merkle.verifyConsistency(
            oldSize: end.size, newSize: top.size, oldRoot: end.root, newRoot: top.root,
            proof: consistencyProof)
        {
            problems.append("the latest checkpoint is not shown to extend the range checkpoint")
        }
        return problems
    }

    private func verifyRange(_ end: Checkpoint) -> [String] {
        // `from` comes from the bundle's file: a value near UInt64.max must be refused, not overflow.
        let (rangeEnd, overflows) = from.addingReportingOverflow(UInt64(entries.count))
        guard !overflows, rangeEnd == end.size else {
            return [
                "the range from \(from) of \(entries.count) entries does not end at the range checkpoint's size \(end.size)"
            ]
        }
        var problems: [String] = []
        var previousLink: Digest32?
        for (offset, proven) in entries.enumerated() {
            let position = from + UInt64(offset)
            let found: (position: UInt64, previousLink: Digest32, link: Digest32)
            if let opaque = proven.opaque {
                found = (opaque.position, opaque.previousLink, opaque.link)
            } else if let entry = try? LedgerEntry.decode(proven.leaf) {
                found = (entry.position, entry.previousLink, entry.link)
            } else {
                problems.append("entry \(position) does not decode or is out of place")
                continue
            }
            guard found.position == position else {
                problems.append("entry \(position) does not decode or is out of place")
                continue
            }
            if let previousLink, found.previousLink != previousLink {
                problems.append("entry \(position) does not link to entry \(position - 1)")
            }
            if !Merkle.verifyInclusion(
                leafHash: proven.leafHash, index: position, size: end.size, proof: proven.proof, root: end.root)
            {
                problems.append("entry \(position) is not proven in the range checkpoint")
            }
            previousLink = found.link
        }
        if let previousLink, previousLink != end.head {
            problems.append("the range's last entry is not the checkpoint's chain head")
        }
        return problems
    }
}
