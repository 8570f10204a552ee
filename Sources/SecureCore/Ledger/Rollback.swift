import SecureCrypto

/// What a payer's transfer envelope carries to show that its checkpoint extends what it sent this payee
/// before: an RFC 9162 consistency proof from the payer's root at `fromSize` (a checkpoint it sent this
/// payee) to the transfer's checkpoint. See docs/PROTOCOL.md, "Envelopes".
public struct ConsistencyClaim: Hashable, Sendable {
    /// An envelope carries a claim from the last confirmed payment to this payee and from each unconfirmed
    /// one after it, so a payee that never received the latest still finds the one it holds. Eight covers
    /// a payer with seven payments to one payee in flight; a payer with more settles some first.
    public static let countMax = 8

    /// The size of the earlier checkpoint the proof starts from, ≥ 1.
    public let fromSize: UInt64
    /// The payer's Merkle root at that size, as the payer's ledger now has it.
    public let fromRoot: Digest32
    /// The consistency proof from (fromSize, fromRoot) to the transfer's checkpoint.
    public let proof: [Digest32]

    public init(fromSize: UInt64, fromRoot: Digest32, proof: [Digest32]) {
        self.fromSize = fromSize
        self.fromRoot = fromRoot
        self.proof = proof
    }

    /// Whether the proof leads from (fromSize, fromRoot) to `checkpoint`, a strictly larger one.
    public func proves(_ checkpoint: Checkpoint) -> Bool {
        fromSize >= 1 && fromSize < checkpoint.size
            && Merkle.verifyConsistency(
                oldSize: fromSize, newSize: checkpoint.size, oldRoot: fromRoot, newRoot: checkpoint.root, proof: proof)
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(fromSize)
        writer.write(fromRoot)
        writer.write(proof: proof)
    }

    static func decode(from reader: inout ByteReader) throws -> ConsistencyClaim? {
        guard let size = reader.readUInt64(), let root = reader.read(Digest32.self), let proof = try reader.readProof()
        else { return nil }
        return ConsistencyClaim(fromSize: size, fromRoot: root, proof: proof)
    }
}

/// A consistency proof a payee kept from an accepted transfer: the claim, proven to lead to the payer's
/// signed checkpoint `target`, which the payee holds. It lets a late, older transfer be linked to what the
/// payee holds, and turns a conflicting one into evidence of type 6.
public typealias KeptProof = (claim: ConsistencyClaim, target: SignedCheckpoint)

/// The payee's check that a payer's transfer by file does not roll back a history the payee has seen:
/// what offline checking can catch of a payer restored from an old copy (docs/THREAT-MODEL.md).
public enum RollbackCheck {
    /// What the check found.
    public enum Verdict: Hashable, Sendable {
        /// Nothing the payee holds contradicts the transfer's checkpoint, and it is linked to what is held.
        case consistent
        /// The payer signed two histories: the evidence proves it (types 1 and 6).
        case fork(ForkEvidence)
        /// Nothing proves the checkpoint extends what the payee holds, nor that it does not: the two
        /// checkpoints are kept for the clearing and the transfer is refused by policy.
        case unproven(held: SignedCheckpoint, reason: String)
        /// The proof in the envelope does not verify.
        case invalidProof
        /// An older transfer than one the payee holds, which no kept proof links to it.
        case staleUnlinked
    }

    /// The verdict for `offered` (the transfer's checkpoint) with the envelope's `claims`, given the payer's
    /// checkpoints the payee `held` (any order) and the proofs it `kept`. `payerLog` is the payer's key-event
    /// log the transfer was proven against: fork evidence carries it, and is proven only where each
    /// checkpoint's key was in force at its size by it, so a fork across a rotation is proven too.
    public static func evaluate(
        _ offered: SignedCheckpoint, claims: [ConsistencyClaim], held: [SignedCheckpoint], kept: [KeptProof],
        payerLog: KeyEventLog
    ) -> Verdict {
        func evidenceOrUnproven(_ kind: ForkEvidence.Kind, held: SignedCheckpoint) -> Verdict {
            let evidence = ForkEvidence(kind, log: payerLog)
            return evidence.verify().isProven
                ? .fork(evidence)
                : .unproven(held: held, reason: "the payer's checkpoints disagree, but the evidence proves no fork")
        }
        let new = offered.checkpoint
        guard claims.allSatisfy({ $0.proves(new) }) else { return .invalidProof }
        if let same = held.first(where: { $0.checkpoint.size == new.size }) {
            guard same.checkpoint.root == new.root, same.checkpoint.head == new.head else {
                return evidenceOrUnproven(.conflictingCheckpoints(same, offered), held: same)
            }
            return .consistent
        }
        for claim in claims {
            guard let start = held.first(where: { $0.checkpoint.size == claim.fromSize }),
                start.checkpoint.root != claim.fromRoot
            else { continue }
            let evidence = ForkEvidence.Kind.rolledBack(
                RolledBack(earlier: start, later: offered, claimedRoot: claim.fromRoot, proof: claim.proof))
            return evidenceOrUnproven(evidence, held: start)
        }
        guard let latest = held.max(by: { $0.checkpoint.size < $1.checkpoint.size }) else { return .consistent }
        if new.size > latest.checkpoint.size {
            // A claim from exactly the latest held size was checked against its root just above.
            guard claims.contains(where: { $0.fromSize == latest.checkpoint.size }) else {
                return .unproven(
                    held: latest,
                    reason: "the transfer proves no link from the payer's checkpoint of \(latest.checkpoint.size) "
                        + "entries this wallet holds")
            }
            return .consistent
        }
        // An older transfer than the latest held: only a kept proof from exactly its size links it.
        guard let link = kept.first(where: { $0.claim.fromSize == new.size }) else { return .staleUnlinked }
        guard link.claim.fromRoot == new.root else {
            let evidence = ForkEvidence.Kind.rolledBack(
                RolledBack(
                    earlier: offered, later: link.target, claimedRoot: link.claim.fromRoot, proof: link.claim.proof))
            return evidenceOrUnproven(evidence, held: link.target)
        }
        return .consistent
    }
}

/// Evidence of type 6: a signed checkpoint `earlier` (size m), a signed checkpoint `later` (size n > m) of
/// the same wallet, each signed by the key its log shows in force at its size (one key, or two across a rotation), a root `claimedRoot` ≠ earlier's root, and an RFC 9162 consistency proof from
/// (m, claimedRoot) to `later`. The wallet's own later history says its root at m was `claimedRoot`, while it
/// signed another root at m: it signed two histories, as a payer restored from an old copy that pads its
/// ledger and pays again does.
public struct RolledBack: Hashable, Sendable {
    public let earlier: SignedCheckpoint
    public let later: SignedCheckpoint
    public let claimedRoot: Digest32
    public let proof: [Digest32]

    public init(earlier: SignedCheckpoint, later: SignedCheckpoint, claimedRoot: Digest32, proof: [Digest32]) {
        self.earlier = earlier
        self.later = later
        self.claimedRoot = claimedRoot
        self.proof = proof
    }

    func verify(log: KeyEventLog) -> ForkVerdict {
        if let refusal = ForkEvidence.checkPair(earlier, later, log: log) { return refusal }
        let m = earlier.checkpoint, n = later.checkpoint
        guard m.size < n.size else {
            return .notProven(.sizesDiffer, "type 6 needs the first checkpoint smaller than the second")
        }
        guard claimedRoot != m.root else {
            return .notProven(.noConflict, "the proof starts from the root the first checkpoint signed")
        }
        guard
            Merkle.verifyConsistency(
                oldSize: m.size, newSize: n.size, oldRoot: claimedRoot, newRoot: n.root, proof: proof)
        else { return .notProven(.noConflict, "the consistency proof does not lead to the second checkpoint") }
        return .forkProven(
            "the wallet signed a root at \(m.size) entries that its own later history of \(n.size) entries contradicts")
    }

    func encode(into writer: inout ByteWriter) {
        earlier.encode(into: &writer)
        later.encode(into: &writer)
        writer.write(claimedRoot)
        writer.write(proof: proof)
    }

    static func decode(from reader: inout ByteReader) throws -> RolledBack? {
        guard let earlier = try SignedCheckpoint.decode(from: &reader),
            let later = try SignedCheckpoint.decode(from: &reader), let root = reader.read(Digest32.self),
            let proof = try reader.readProof()
        else { return nil }
        return RolledBack(earlier: earlier, later: later, claimedRoot: root, proof: proof)
    }
}
