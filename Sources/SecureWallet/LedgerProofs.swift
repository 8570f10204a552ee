import Foundation
import SecureCore
import SecureCrypto
import SecureStore

/// Offline-checkable proofs about a ledger: that an entry is in a signed checkpoint (inclusion), and that
/// one signed checkpoint extends another (consistency). Both check with the wallet's public key alone.
/// The JSON format is in docs/PROTOCOL.md ("Proof files").
public enum LedgerProof: Equatable, Sendable {
    case inclusion(entry: [UInt8], index: UInt64, checkpoint: [UInt8], proof: [Digest32])
    case consistency(from: [UInt8], to: [UInt8], proof: [Digest32])

    static let inclusionType = "secure-inclusion-proof-v1"
    static let consistencyType = "secure-consistency-proof-v1"

    /// The proof that the entry with `id` is in the wallet's latest checkpoint.
    public static func inclusion(of id: StatementID, in wallet: Wallet) throws -> LedgerProof {
        guard let entry = try wallet.ledger.entry(id: id) else {
            throw WalletError(.notFound, "no entry with id \(id) in this wallet")
        }
        guard let latest = wallet.latest else { throw WalletError(.notFound, "the wallet has no checkpoint yet") }
        return .inclusion(
            entry: entry.encoded, index: entry.position, checkpoint: latest.encoded,
            proof: try wallet.ledger.inclusionProof(index: entry.position, size: latest.checkpoint.size))
    }

    /// The proof that the checkpoint of size `to` extends the one of size `from`.
    public static func consistency(from: UInt64, to: UInt64, in wallet: Wallet) throws -> LedgerProof {
        guard from >= 1, from <= to else {
            throw WalletError(.invalidInput, "--from must be at least 1 and not above --to")
        }
        guard let old = try wallet.ledger.checkpoint(size: from), let new = try wallet.ledger.checkpoint(size: to)
        else {
            throw WalletError(
                .notFound, "the wallet holds no signed checkpoint of size \(from) or \(to) (it has 1 … \(wallet.size))")
        }
        return .consistency(from: old, to: new, proof: try wallet.ledger.consistencyProof(oldSize: from, newSize: to))
    }

    /// Checks the proof against a wallet key. Returns a sentence saying what it proves, or throws why not.
    public func verify(key: P256.PublicKey) throws -> String {
        try verify { try Self.checkpoint($0, key: key) }
    }

    /// Checks the proof against a wallet's key-event log, so proofs across a rotation verify: each
    /// checkpoint must name the log's wallet, be signed by the key it names, and that key must be in force
    /// at the checkpoint's size (not retired, not before its event).
    public func verify(log: KeyEventLog) throws -> String {
        try verify { bytes in
            guard let signed = try? SignedCheckpoint.decode(bytes), signed.checkpoint.walletID == log.walletID,
                signed.isSelfConsistent, log.check(signed) == .inForce
            else {
                throw WalletError(
                    .verificationFailed,
                    "a checkpoint in the proof is malformed, of another wallet, or not "
                        + "signed by the key the key-event log shows in force at its size")
            }
            return signed
        }
    }

    private func verify(checkpoint: ([UInt8]) throws -> SignedCheckpoint) throws -> String {
        switch self {
        case .inclusion(let entryBytes, let index, let checkpointBytes, let proof):
            let signed = try checkpoint(checkpointBytes)
            guard let entry = try? LedgerEntry.decode(entryBytes), entry.position == index else {
                throw WalletError(.verificationFailed, "the proof's entry does not decode, or is not at its index")
            }
            guard index < signed.checkpoint.size,
                Merkle.verifyInclusion(
                    leafHash: Merkle.leafHash(entryBytes), index: index,
                    size: signed.checkpoint.size, proof: proof,
                    root: signed.checkpoint.root)
            else {
                throw WalletError(
                    .verificationFailed, "the inclusion proof does not lead to the signed checkpoint's root")
            }
            return "entry \(index) (id \(entry.id)) is in checkpoint \(signed.checkpoint.size) of wallet "
                + signed.checkpoint.walletID.hex
        case .consistency(let fromBytes, let toBytes, let proof):
            let old = try checkpoint(fromBytes), new = try checkpoint(toBytes)
            guard old.checkpoint.walletID == new.checkpoint.walletID,
                Merkle.verifyConsistency(
                    oldSize: old.checkpoint.size, newSize: new.checkpoint.size,
                    oldRoot: old.checkpoint.root, newRoot: new.checkpoint.root, proof: proof)
            else {
                throw WalletError(
                    .verificationFailed,
                    "the consistency proof does not show checkpoint \(new.checkpoint.size) "
                        + "extending checkpoint \(old.checkpoint.size)")
            }
            return "checkpoint \(new.checkpoint.size) extends checkpoint \(old.checkpoint.size) of wallet "
                + new.checkpoint.walletID.hex
        }
    }

    private static func checkpoint(_ bytes: [UInt8], key: P256.PublicKey) throws -> SignedCheckpoint {
        guard let signed = try? SignedCheckpoint.decode(bytes), signed.isValid(signedBy: key) else {
            throw WalletError(.verificationFailed, "a checkpoint in the proof is malformed or not signed by this key")
        }
        return signed
    }

    // MARK: JSON

    /// The proof as a JSON document.
    public var json: [String: Any] {
        switch self {
        case .inclusion(let entry, let index, let checkpoint, let proof):
            return [
                "type": Self.inclusionType, "entry": Hex.encode(entry), "index": index,
                "checkpoint": Hex.encode(checkpoint), "proof": proof.map(\.hex),
            ]
        case .consistency(let from, let to, let proof):
            return [
                "type": Self.consistencyType, "from": Hex.encode(from), "to": Hex.encode(to),
                "proof": proof.map(\.hex),
            ]
        }
    }

    /// Parses a JSON proof document; anything malformed is an error naming the field.
    public init(json data: Data) throws {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let type = object["type"] as? String
        else {
            throw WalletError(.invalidInput, "not a proof document (JSON object with a \"type\")")
        }
        func bytes(_ name: String) throws -> [UInt8] {
            guard let text = object[name] as? String, let value = Hex.decode(text) else {
                throw WalletError(.invalidInput, "the proof's \"\(name)\" is missing or not hex")
            }
            return value
        }
        guard let proofTexts = object["proof"] as? [String], proofTexts.count <= Merkle.proofHashCountMax else {
            throw WalletError(.invalidInput, "the proof's \"proof\" is missing or too long")
        }
        let proof = try proofTexts.map { text -> Digest32 in
            guard let hash = Digest32(hex: text) else {
                throw WalletError(.invalidInput, "a proof hash is not \(Digest32.byteCount) bytes of hex")
            }
            return hash
        }
        switch type {
        case Self.inclusionType:
            guard let index = (object["index"] as? NSNumber)?.uint64Value else {
                throw WalletError(.invalidInput, "the proof has no index")
            }
            self = .inclusion(
                entry: try bytes("entry"), index: index, checkpoint: try bytes("checkpoint"), proof: proof)
        case Self.consistencyType:
            self = .consistency(from: try bytes("from"), to: try bytes("to"), proof: proof)
        default:
            throw WalletError(.invalidInput, "unknown proof type \"\(type)\"")
        }
    }
}
