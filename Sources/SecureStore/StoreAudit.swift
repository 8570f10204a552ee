import SecureCore
import SecureCrypto

/// The physical checks of `ledger verify`: SQLite's own `integrity_check`, then every row of every table
/// read and each blob decoded with its decoder. SQLCipher 3.4.1 has no `cipher_integrity_check`, and a
/// page it cannot authenticate shows up only when something reads it: reading every row is what makes a
/// flipped byte in a page in use fail verification.
extension LedgerStore {
    /// How many `integrity_check` messages are reported at most; SQLite stops at 100 by default.
    static let integrityMessageCountMax = 20

    /// Moves the WAL's committed frames into the database file and truncates the WAL, so the file alone is
    /// what the later checks read. Only a store opened for appending may do it: a reading open is one WAL
    /// snapshot that must not write, and its reads go through the WAL anyway.
    public func checkpointWAL() throws {
        let statement = try database.prepare("PRAGMA wal_checkpoint(TRUNCATE)")
        guard try statement.step() else { return }
        // Columns: busy, frames in the WAL, frames checkpointed. Busy means a reader held back the truncation.
        if statement.integer(0) != 0 {
            throw StoreError(.sqlite, "the WAL could not be checkpointed: another process is reading the ledger")
        }
    }

    /// The problems found reading the database as a file of rows, each naming its table and key.
    public func physicalProblems() -> [String] {
        var problems = integrityProblems()
        for (table, check) in Self.tableChecks {
            do {
                problems += try check(self)
            } catch {
                problems.append("table \(table): cannot be read to the end: \(error)")
            }
        }
        return problems
    }

    private func integrityProblems() -> [String] {
        do {
            let statement = try database.prepare("PRAGMA integrity_check(\(Self.integrityMessageCountMax))")
            var messages: [String] = []
            while try statement.step() { messages.append(statement.text(0) ?? "?") }
            return messages == ["ok"] ? [] : messages.map { "integrity_check: \($0)" }
        } catch {
            return ["integrity_check: cannot run: \(error)"]
        }
    }

    /// Each table and the check of its rows; every table of the schema is listed (a test compares them).
    static let tableChecks: [(String, @Sendable (LedgerStore) throws -> [String])] = [
        ("meta", { try $0.metaProblems() }),
        ("entries", { try $0.entryProblems() }),
        (
            "checkpoints",
            { try $0.rows("checkpoints", "size", "encoded") { (try? SignedCheckpoint.decode($0)).flatMap { $0 } } }
        ),
        ("nodes", { try $0.rows("nodes", "level || ':' || idx", "hash") { Digest32(bytes: $0) } }),
        ("outgoing", { try $0.outgoingProblems() }),
        (
            "ready_records",
            { try $0.rows("ready_records", "hex(offer_id)", "record") { (try? ReadyRecord.decode($0)).flatMap { $0 } } }
        ),
        (
            "refusals",
            { try $0.rows("refusals", "hex(id)", "signed") { (try? SignedRefusal.decode($0)).flatMap { $0 } } }
        ),
        ("statements", { try $0.statementRowProblems() }),
        (
            "peer_checkpoints",
            {
                try $0.rows("peer_checkpoints", "hex(wallet) || ':' || size", "encoded") {
                    (try? SignedCheckpoint.decode($0)).flatMap { $0 }
                }
            }
        ),
        (
            "evidence",
            { try $0.rows("evidence", "hex(digest)", "encoded") { (try? ForkEvidence.decode($0)).flatMap { $0 } } }
        ),
        (
            "peer_key_events",
            {
                try $0.rows("peer_key_events", "hex(wallet) || ':' || sequence", "encoded") {
                    (try? SignedKeyEvent.decode($0)).flatMap { $0 }
                }
            }
        ),
        (
            "peer_proofs",
            {
                let key = "hex(wallet) || ':' || from_size || '-' || to_size"
                return try $0.rows("peer_proofs", key, "proof") { $0.count % Digest32.byteCount == 0 ? $0 : nil }
                    + $0.rows("peer_proofs", key, "from_root") { Digest32(bytes: $0) }
            }
        ),
        (
            "banning_evidence",
            {
                try $0.rows("banning_evidence", "hex(digest)", "accused") { WalletID(bytes: $0) }
                    + $0.banningProblems()
            }
        ),
        ("contacts", { try $0.contactRowProblems() }),
        ("contact_keys", { try $0.contactKeyProblems() }),
        (
            "clearing_cosignatures",
            { store in
                try store.rows("clearing_cosignatures", "hex(issuer)", "encoded") {
                    (try? Cosignature.decode($0)).flatMap { $0 }
                }
                    + store.rows("clearing_cosignatures", "hex(issuer)", "list_head") {
                        (try? SignedClearingTreeHead.decode($0)).flatMap { $0 }
                    }
            }
        ),
        (
            "clearing_list",
            {
                try $0.rows("clearing_list", "hex(issuer) || ':' || version", "encoded") {
                    (try? ListIncrement.decode($0)).flatMap { $0 }
                }
            }
        ),
        (
            "inconsistencies",
            { store in
                try ["held", "offered"].flatMap { column in
                    try store.rows("inconsistencies", "hex(wallet)", column) {
                        (try? SignedCheckpoint.decode($0)).flatMap { $0 }
                    }
                }
            }
        ),
    ]

    /// The schema's table names, from `sqlite_master`.
    func tableNames() throws -> [String] {
        let statement = try database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var names: [String] = []
        while try statement.step() { names.append(statement.text(0) ?? "") }
        return names
    }

    /// Reads every row of `table`, decoding column `blob` with `decode`; a row whose blob does not decode is a
    /// problem named by its key expression `key`.
    private func rows<Value>(_ table: String, _ key: String, _ blob: String, decode: ([UInt8]) -> Value?) throws
        -> [String]
    {
        let statement = try database.prepare("SELECT \(key), \(blob) FROM \(table)")
        var problems: [String] = []
        while try statement.step() {
            if decode(statement.blob(1)) == nil {
                problems.append("table \(table), row \(statement.text(0) ?? "?"): its \(blob) does not decode")
            }
        }
        return problems
    }

    /// Each ban rests on evidence: the row names fork evidence this wallet holds, which accuses the barred
    /// wallet and is proven against that wallet's log as this wallet follows it (evidence v2). A row alone,
    /// or one whose evidence proves nothing, is a problem.
    private func banningProblems() throws -> [String] {
        let statement = try database.prepare(
            "SELECT hex(b.digest), b.accused, e.encoded FROM banning_evidence b LEFT JOIN evidence e ON e.digest = b.digest"
        )
        var problems: [String] = []
        while try statement.step() {
            let row = "table banning_evidence, row \(statement.text(0) ?? "?")"
            guard !statement.isNull(2), let evidence = (try? ForkEvidence.decode(statement.blob(2))).flatMap({ $0 })
            else {
                problems.append("\(row): it names no fork evidence this wallet holds")
                continue
            }
            guard let barred = evidence.bannedWallet, barred.bytes == statement.blob(1) else {
                problems.append("\(row): it bars another wallet than its evidence accuses")
                continue
            }
            // A peer log that does not read is a problem of its own table; the carried log decides here.
            let known = (try? peerKeyEventLog(wallet: barred)) ?? nil
            if case .notProven(let reason, _) = evidence.verify(knownLog: known) {
                problems.append("\(row): its evidence proves no fork (\(reason.rawValue))")
            }
        }
        return problems
    }

    /// Each contact key seed is 64 bytes and makes the key its key event names (SHA-256 of the encapsulation
    /// key), and every key event of the ledger that names a contact key has its seed: a seed lost or changed
    /// would leave the wallet unable to open what its contacts sealed to it. The seeds are read into
    /// wiped-on-release memory, and each derived key is released (and wiped) before the next row.
    func contactKeyProblems() throws -> [String] {
        var named: [UInt64: Digest32] = [:]
        let events = try database.prepare("SELECT encoded FROM entries WHERE kind = ?")
            .bind([.integer(Int64(EntryKind.keyEvent.rawValue))])
        while try events.step() {
            // An entry or event that does not decode is the entries check's problem (and the replay's).
            guard let entry = (try? LedgerEntry.decode(events.blob(0))).flatMap({ $0 }),
                let event = (try? SignedKeyEvent.decode(entry.payload)).flatMap({ $0 })?.event, event.hasContactKey
            else { continue }
            named[event.sequence] = event.contactKeyDigest
        }
        var problems: [String] = []
        var seen = Set<UInt64>()
        for sequence in try contactKeySequences() {
            seen.insert(sequence)
            let row = "table contact_keys, row \(sequence)"
            guard let digest = named[sequence] else {
                problems.append("\(row): no key event of the ledger with that sequence names a contact key")
                continue
            }
            guard let seed = try contactKeySeed(sequence: sequence), seed.count == Self.contactKeySeedByteCount,
                let key = try? MLKEM1024.PrivateKey(seed: seed)
            else {
                problems.append("\(row): its seed is not \(Self.contactKeySeedByteCount) bytes")
                continue
            }
            if KeyEvent.contactKeyDigest(of: key.publicKey) != digest {
                problems.append("\(row): its seed does not make the contact key key event \(sequence) names")
            }
        }
        for sequence in named.keys.sorted() where !seen.contains(sequence) {
            problems.append("table contact_keys: the seed of key event \(sequence)'s contact key is missing")
        }
        return problems
    }

    private func metaProblems() throws -> [String] {
        let statement = try database.prepare("SELECT name, value FROM meta")
        var problems: [String] = []
        while try statement.step() {
            let name = statement.text(0) ?? "?", value = statement.blob(1)
            let good: Bool
            switch name {
            case "wallet-id": good = WalletID(bytes: value) != nil
            case "merkle-peaks": good = (try? treePeaks()) != nil
            case "trusted-issuers":
                good =
                    value.count % P256.uncompressedPointByteCount == 0
                    && stride(from: 0, to: value.count, by: P256.uncompressedPointByteCount).allSatisfy {
                        (try? P256.PublicKey(x963: Array(value[$0..<$0 + P256.uncompressedPointByteCount]))) != nil
                    }
            default: good = true
            }
            if !good { problems.append("table meta, row \(name): its value does not decode") }
        }
        return problems
    }

    /// Each entry row decodes, and its columns (id, kind, link, leaf) are the decoded entry's.
    private func entryProblems() throws -> [String] {
        let statement = try database.prepare("SELECT position, id, kind, encoded, link, leaf FROM entries")
        var problems: [String] = []
        while try statement.step() {
            let position = statement.integer(0), encoded = statement.blob(3)
            guard let entry = (try? LedgerEntry.decode(encoded)).flatMap({ $0 }), Int64(entry.position) == position,
                statement.blob(1) == entry.id.bytes, statement.integer(2) == Int64(entry.kind.rawValue),
                statement.blob(4) == entry.link.bytes, statement.blob(5) == Merkle.leafHash(encoded).bytes
            else {
                problems.append("table entries, row \(position): it does not decode, or its columns differ from it")
                continue
            }
        }
        return problems
    }

    private func outgoingProblems() throws -> [String] {
        let statement = try database.prepare("SELECT hex(transfer_id), signed, receipt, message FROM outgoing")
        var problems: [String] = []
        while try statement.step() {
            let key = statement.text(0) ?? "?"
            if (try? SignedTransfer.decode(statement.blob(1))).flatMap({ $0 }) == nil {
                problems.append("table outgoing, row \(key): its signed transfer does not decode")
            }
            if !statement.isNull(2), (try? SignedReceipt.decode(statement.blob(2))).flatMap({ $0 }) == nil {
                problems.append("table outgoing, row \(key): its receipt does not decode")
            }
            if !statement.isNull(3), (try? PeerMessage.decode(statement.blob(3))).flatMap({ $0 }) == nil {
                problems.append("table outgoing, row \(key): its peer message does not decode")
            }
        }
        return problems
    }

    private func statementRowProblems() throws -> [String] {
        let statement = try database.prepare("SELECT hex(signer), hex(id), signer, id, kind, digest FROM statements")
        var problems: [String] = []
        while try statement.step() {
            let good =
                Digest32(bytes: statement.blob(2)) != nil && StatementID(bytes: statement.blob(3)) != nil
                && EntryKind(rawValue: UInt8(clamping: statement.integer(4))) != nil
                && Digest32(bytes: statement.blob(5)) != nil
            if !good {
                problems.append(
                    "table statements, row \(statement.text(0) ?? "?"):\(statement.text(1) ?? "?"): it does not decode")
            }
        }
        return problems
    }
}

extension LedgerStore {
    /// The sources `EntryStatementCheck` reads from this database: peers' key-event logs (`peer_key_events`,
    /// each verified from inception as it is read, and read once) and the signed transfers sent (`outgoing`).
    /// A row that does not decode is a missing source; the physical checks report the row itself.
    public func statementSources(walletID: WalletID, trustedIssuers: Set<WalletID>) -> StatementSources {
        let logs = PeerLogCache(store: self)
        return StatementSources(
            walletID: walletID, trustedIssuers: trustedIssuers, peerLog: { logs.log($0) },
            sentTransfer: { [self] id in
                (try? outgoing(transferID: id)).flatMap { $0 }.flatMap {
                    (try? SignedTransfer.decode($0.signed)) ?? nil
                }
            })
    }
}

/// The peers' logs read so far, so a verification reads and verifies each peer's log once.
final class PeerLogCache {
    private let store: LedgerStore
    private var logs: [WalletID: KeyEventLog?] = [:]

    init(store: LedgerStore) { self.store = store }

    func log(_ wallet: WalletID) -> KeyEventLog? {
        if let known = logs[wallet] { return known }
        let log = (try? store.peerKeyEventLog(wallet: wallet)) ?? nil
        logs[wallet] = log
        return log
    }
}
