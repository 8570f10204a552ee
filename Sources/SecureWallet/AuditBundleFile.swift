import Foundation
import SecureCore
import SecureCrypto
import SecureStore

/// The audit bundle as a JSON file (`secure audit export`, `secure audit verify`), documented in
/// docs/PROTOCOL.md ("Audit bundles"). Binary fields are lowercase hex of the encodings documented there.
public enum AuditBundleFile {
    /// Version 2 carries contact settings entries without their content (`AuditBundle.OpaqueEntry`); a
    /// version 1 bundle (every entry whole) still verifies.
    public static let format = "secure-audit-bundle-v2"
    static let formatsRead: Set<String> = ["secure-audit-bundle-v1", format]
    /// A bundle carries at most this many entries: a range of a million entries is ~1 GiB of JSON already.
    public static let entryCountMax: UInt64 = 1_000_000
    /// What `verify` reads at most.
    public static let fileByteCountMax = 2_147_483_647

    /// A whole entry has `entry`; an opaque one (a contact settings entry) has `id`, `digest`, `leafHash` and
    /// `previousLink` instead.
    struct ProvenJSON: Codable {
        let position: UInt64
        var entry: String? = nil
        var id: String? = nil
        var digest: String? = nil
        var leafHash: String? = nil
        var previousLink: String? = nil
        let proof: [String]
    }

    struct KeyJSON: Codable {
        let sequence: UInt64
        let spki: String
        let fingerprint: String
    }

    struct EventJSON: Codable {
        let sequence: UInt64
        let event: String
        let entry: String
        let proof: [String]
    }

    struct Document: Codable {
        let format: String
        let walletID: String
        let publicKeys: [KeyJSON]
        let keyEvents: [EventJSON]
        let from: UInt64
        let to: UInt64
        let entries: [ProvenJSON]
        let rangeCheckpoint: String
        let latestCheckpoint: String
        let consistencyProof: [String]
        /// What the statement checks need (absent from bundles written before them).
        let statementSources: SourcesJSON?
    }

    struct PeerLogJSON: Codable {
        let walletID: String
        let events: [String]
    }

    /// Hex of trusted issuers' wallet ids, each peer's signed key events, and each signed transfer sent.
    struct SourcesJSON: Codable {
        let trustedIssuers: [String]
        let peerKeyEvents: [PeerLogJSON]
        let sentTransfers: [String]
    }

    /// The bundle of a wallet for entries [from, to) (default: the whole ledger).
    public static func export(_ wallet: Wallet, from: UInt64 = 0, to: UInt64? = nil) throws -> [UInt8] {
        let store = wallet.ledger
        guard let latestBytes = try store.latestCheckpoint()?.encoded,
            let latest = try SignedCheckpoint.decode(latestBytes)
        else {
            throw StoreError(.corrupted, "the ledger has no latest checkpoint")
        }
        let size = latest.checkpoint.size
        let end = to ?? size
        guard from < end, end <= size, end - from <= entryCountMax else {
            throw WalletError(
                .invalidInput,
                "--from and --to must name a non-empty range within 0 … \(size) of at most \(entryCountMax) entries")
        }
        guard let rangeBytes = try store.checkpoint(size: end) else {
            throw WalletError(.notFound, "the wallet holds no signed checkpoint of size \(end)")
        }
        let hex = { (proof: [Digest32]) in proof.map(\.hex) }
        var entries: [ProvenJSON] = []
        try store.forEachEntry(from: from, to: end) { entry in
            let proof = hex(try store.inclusionProof(index: entry.position, size: end))
            if AuditBundle.isOpaque(entry) {
                let opaque = AuditBundle.OpaqueEntry(entry)
                entries.append(
                    ProvenJSON(
                        position: entry.position, id: opaque.id.hex, digest: opaque.digest.hex,
                        leafHash: opaque.leafHash.hex, previousLink: opaque.previousLink.hex, proof: proof))
            } else {
                entries.append(ProvenJSON(position: entry.position, entry: Hex.encode(entry.encoded), proof: proof))
            }
        }
        let events = try store.entries(kind: .keyEvent).map { entry in
            EventJSON(
                sequence: try SignedKeyEvent.decode(entry.payload)!.event.sequence, event: Hex.encode(entry.payload),
                entry: Hex.encode(entry.encoded),
                proof: hex(try store.inclusionProof(index: entry.position, size: size)))
        }
        let document = Document(
            format: format, walletID: wallet.walletID.hex,
            publicKeys: wallet.keyLog.events.filter(\.event.kind.isKeyBearing).map {
                KeyJSON(
                    sequence: $0.event.sequence, spki: Hex.encode($0.event.signingKey.spki),
                    fingerprint: Hex.encode($0.event.signingKey.fingerprint))
            },
            keyEvents: events, from: from, to: end, entries: entries, rangeCheckpoint: Hex.encode(rangeBytes),
            latestCheckpoint: Hex.encode(latestBytes),
            consistencyProof: hex(try store.consistencyProof(oldSize: end, newSize: size)),
            statementSources: try sources(wallet, from: from, to: end))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(document)) + [0x0a]
    }

    /// The statement sources of the entries [from, to): the trusted issuers, the logs of the peers they name,
    /// and the signed transfers this wallet sent that they name.
    static func sources(_ wallet: Wallet, from: UInt64, to: UInt64) throws -> SourcesJSON {
        let store = wallet.ledger
        var peers = Set<WalletID>(), sent = Set<TransferID>()
        try store.forEachEntry(from: from, to: to) { entry in
            switch entry.kind {
            case .paymentIn, .paymentOut, .reversal, .confirmation, .deposit, .redemption:
                if let peer = WalletID(bytes: entry.counterparty) { peers.insert(peer) }
                if entry.kind != .paymentIn, entry.kind != .deposit, entry.kind != .redemption,
                    let id = entry.statement.flatMap({ TransferID(bytes: $0.id.bytes) })
                {
                    sent.insert(id)
                }
            case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .settings,
                .mint:
                break
            }
        }
        let logs = try peers.sorted { $0.hex < $1.hex }.compactMap { peer in
            try store.peerKeyEventLog(wallet: peer).map {
                PeerLogJSON(walletID: peer.hex, events: $0.events.map { Hex.encode($0.encoded) })
            }
        }
        let transfers = try sent.sorted { $0.hex < $1.hex }.compactMap { try store.outgoing(transferID: $0)?.signed }
        return SourcesJSON(
            trustedIssuers: try wallet.trustedIssuers().map(\.hex).sorted(), peerKeyEvents: logs,
            sentTransfers: transfers.map(Hex.encode))
    }

    /// The statement context a bundle's sources give.
    static func context(_ json: SourcesJSON) throws -> AuditBundle.StatementContext {
        func bytes(_ text: String, _ what: String) throws -> [UInt8] {
            guard let value = Hex.decode(text) else { throw WalletError(.invalidInput, "\(what) is not hex") }
            return value
        }
        var logs: [WalletID: [SignedKeyEvent]] = [:]
        for peer in json.peerKeyEvents {
            guard let id = WalletID(hex: peer.walletID) else {
                throw WalletError(.invalidInput, "a peer's walletID is not hex of \(WalletID.byteCount) bytes")
            }
            logs[id] = try peer.events.map {
                guard let event = try SignedKeyEvent.decode(try bytes($0, "a peer's key event")) else {
                    throw WalletError(.invalidInput, "a peer's key event in the bundle is truncated")
                }
                return event
            }
        }
        var transfers: [TransferID: SignedTransfer] = [:]
        for text in json.sentTransfers {
            guard let transfer = try SignedTransfer.decode(try bytes(text, "a sent transfer")) else {
                throw WalletError(.invalidInput, "a sent transfer in the bundle is truncated")
            }
            transfers[transfer.payload.order.transferID] = transfer
        }
        let issuers = try json.trustedIssuers.map {
            guard let id = WalletID(hex: $0) else {
                throw WalletError(.invalidInput, "a trusted issuer is not a wallet id (hex of 32 bytes)")
            }
            return id
        }
        return AuditBundle.StatementContext(
            trustedIssuers: Set(issuers), peerKeyEvents: logs, sentTransfers: transfers)
    }

    /// The wallet's key-event log from an audit bundle (`secure audit export`), which must verify as a
    /// whole: the log is then checked from the wallet id and tied to the ledger by its entries' proofs.
    public static func keyEventLog(json file: Data) throws -> KeyEventLog {
        let (problems, bundle) = try verify(Array(file))
        guard problems.isEmpty else {
            throw WalletError(
                .verificationFailed, "the audit bundle does not verify: " + problems.joined(separator: "; "))
        }
        do {
            return try KeyEventLog(verifying: bundle.keyEvents, walletID: bundle.walletID)
        } catch let error as KeyEventError {
            throw WalletError(.verificationFailed, "the bundle's key-event log is refused: \(error)")
        }
    }

    /// A JSON decoding failure in a sentence: the field's path and what was wrong, never Swift's dump.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the document" : names.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(path(context)) is not a \(type)"
        case .valueNotFound(let type, let context): return "\(path(context)) is missing (a \(type))"
        case .keyNotFound(let key, let context):
            return "\(context.codingPath.isEmpty ? "" : path(context) + ": ")the field \(key.stringValue) is missing"
        case .dataCorrupted(let context): return "\(path(context)) is malformed (not valid JSON, or out of range)"
        @unknown default: return "the document is malformed"
        }
    }

    /// Parses and checks a bundle; returns the problems (empty when it verifies) and the bundle.
    public static func verify(_ file: [UInt8]) throws -> (problems: [String], bundle: AuditBundle) {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(file))
        } catch let error as DecodingError {
            throw WalletError(.invalidInput, "not an audit bundle: \(Self.describe(error))")
        } catch {
            throw WalletError(.invalidInput, "not an audit bundle: the file is not JSON")
        }
        guard formatsRead.contains(document.format) else {
            throw WalletError(.invalidInput, "audit bundle format \(document.format) is unknown")
        }
        func bytes(_ text: String, _ what: String) throws -> [UInt8] {
            guard let value = Hex.decode(text) else { throw WalletError(.invalidInput, "\(what) is not hex") }
            return value
        }
        func proof(_ texts: [String]) throws -> [Digest32] {
            try texts.map {
                guard let hash = Digest32(hex: $0) else {
                    throw WalletError(.invalidInput, "a proof hash is not \(Digest32.byteCount) bytes of hex")
                }
                return hash
            }
        }
        func checkpoint(_ text: String) throws -> SignedCheckpoint {
            guard let value = try SignedCheckpoint.decode(try bytes(text, "a checkpoint")) else {
                throw WalletError(.invalidInput, "a checkpoint in the bundle is truncated")
            }
            return value
        }
        let events = try document.keyEvents.map { json -> SignedKeyEvent in
            guard let event = try SignedKeyEvent.decode(try bytes(json.event, "a key event")) else {
                throw WalletError(.invalidInput, "a key event in the bundle is truncated")
            }
            return event
        }
        guard let walletID = WalletID(hex: document.walletID) else {
            throw WalletError(.invalidInput, "the bundle's walletID is not hex of \(WalletID.byteCount) bytes")
        }
        var bundle = AuditBundle(
            walletID: walletID, keyEvents: events,
            keyEventEntries: try document.keyEvents.map {
                .init(leaf: try bytes($0.entry, "an entry"), proof: try proof($0.proof))
            },
            from: document.from,
            entries: try document.entries.map { json in
                if let entry = json.entry {
                    return .init(leaf: try bytes(entry, "an entry"), proof: try proof(json.proof))
                }
                guard document.format == format, let id = json.id.flatMap(StatementID.init(hex:)),
                    let digest = json.digest.flatMap(Digest32.init(hex:)),
                    let leafHash = json.leafHash.flatMap(Digest32.init(hex:)),
                    let previousLink = json.previousLink.flatMap(Digest32.init(hex:))
                else {
                    throw WalletError(
                        .invalidInput,
                        "entry \(json.position) has neither its encoding nor its id, digest, leafHash and previousLink")
                }
                let opaque = AuditBundle.OpaqueEntry(
                    position: json.position, id: id, digest: digest, leafHash: leafHash, previousLink: previousLink)
                return .init(opaque: opaque, proof: try proof(json.proof))
            },
            rangeCheckpoint: try checkpoint(document.rangeCheckpoint),
            latest: try checkpoint(document.latestCheckpoint),
            consistencyProof: try proof(document.consistencyProof))
        bundle.statementContext = try document.statementSources.map(context)
        var problems = bundle.verify()
        // The listed public keys are a convenience; they must be exactly the log's.
        let listed = document.publicKeys.map(\.spki)
        if listed != events.map({ Hex.encode($0.event.signingKey.spki) }) {
            problems.append("the bundle's public keys are not the key-event log's signing keys")
        }
        let (end, overflows) = document.from.addingReportingOverflow(UInt64(document.entries.count))
        if overflows || document.to != end {
            problems.append("\"to\" is not \"from\" plus the number of entries")
        }
        return (problems, bundle)
    }
}
