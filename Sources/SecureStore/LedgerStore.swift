import Foundation
import SecureCore
import SecureCrypto

/// The ledger's SQLCipher database: entries, their leaf hashes, signed checkpoints, the index of signed
/// statements by (signer, id), and peers' checkpoints. One writer per wallet (see `WalletLock`).
/// Writes are single IMMEDIATE transactions on a WAL database with `synchronous=FULL`, so an append is
/// durable when it returns.
public final class LedgerStore: @unchecked Sendable {
    // One wallet process holds the lock and uses its store from one thread at a time.
    let database: Database
    /// The file's path.
    public let path: String

    /// The schema version this code writes. Migrations bring older files up to it.
    public static let schemaVersion: Int64 = 6

    private static let migrations: [Int64: String] = [
        1: """
        CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
        CREATE TABLE entries (position INTEGER PRIMARY KEY, id BLOB NOT NULL, kind INTEGER NOT NULL,
                              encoded BLOB NOT NULL, link BLOB NOT NULL, leaf BLOB NOT NULL);
        CREATE INDEX entries_by_id ON entries (id);
        CREATE INDEX entries_by_kind ON entries (kind);
        CREATE TABLE checkpoints (size INTEGER PRIMARY KEY, encoded BLOB NOT NULL);
        CREATE TABLE nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (level, idx));
        CREATE TABLE outgoing (transfer_id BLOB PRIMARY KEY, position INTEGER NOT NULL, signed BLOB NOT NULL,
                               status INTEGER NOT NULL, receipt BLOB, message BLOB);
        CREATE TABLE ready_records (offer_id BLOB PRIMARY KEY, record BLOB NOT NULL);
        CREATE TABLE refusals (signer BLOB NOT NULL, id BLOB NOT NULL, signed BLOB NOT NULL, PRIMARY KEY (signer, id));
        CREATE TABLE statements (signer BLOB NOT NULL, id BLOB NOT NULL, kind INTEGER NOT NULL,
                                 digest BLOB NOT NULL, position INTEGER NOT NULL, PRIMARY KEY (signer, id));
        CREATE INDEX statements_by_kind_id ON statements (kind, id);
        CREATE TABLE peer_checkpoints (wallet BLOB NOT NULL, size INTEGER NOT NULL, encoded BLOB NOT NULL,
                                       PRIMARY KEY (wallet, size));
        CREATE TABLE evidence (digest BLOB PRIMARY KEY, encoded BLOB NOT NULL);
        """,
        // Version 2 (key rotation): the key-event logs of peers and trusted issuers, one row per event.
        2: """
        CREATE TABLE peer_key_events (wallet BLOB NOT NULL, sequence INTEGER NOT NULL, encoded BLOB NOT NULL,
                                      PRIMARY KEY (wallet, sequence));
        """,
        // Version 3 (sound money): ready records keyed by (offer id, payer wallet id), inserted once and never
        // replaced, and marked with the transfer they were consumed by, in the credit's own transaction.
        3: """
        DROP TABLE ready_records;
        CREATE TABLE ready_records (offer_id BLOB NOT NULL, payer BLOB NOT NULL, record BLOB NOT NULL,
                                    consumed_by BLOB, PRIMARY KEY (offer_id, payer));
        CREATE TABLE IF NOT EXISTS peer_proofs (wallet BLOB NOT NULL, from_size INTEGER NOT NULL, from_root BLOB NOT NULL,
                                  to_size INTEGER NOT NULL, proof BLOB NOT NULL,
                                  PRIMARY KEY (wallet, from_size, to_size));
        CREATE TABLE IF NOT EXISTS inconsistencies (wallet BLOB NOT NULL, held BLOB NOT NULL, offered BLOB NOT NULL,
                                      PRIMARY KEY (wallet, held, offered));
        CREATE TABLE IF NOT EXISTS banning_evidence (digest BLOB PRIMARY KEY, accused BLOB NOT NULL);
        """,
        // Version 4 (the index commitment D): indexes that hold every committed column in D's order, so D is
        // one sequential scan of each with no sort and no row looked up (LedgerIndex).
        4: """
        CREATE INDEX IF NOT EXISTS statements_committed ON statements (signer, id, kind, digest, position);
        CREATE INDEX IF NOT EXISTS outgoing_committed ON outgoing (transfer_id, status);
        """,
        // Version 5 (contacts and contact keys): each contact record by its digest, which the ledger's contact
        // settings entries hold, with its pairwise secret beside it (a removed contact's row stays, marked); and
        // the 64-byte ML-KEM-1024 seed d ‖ z of each key event that names a contact key, by the event's
        // sequence, written in the transaction of that event's entry. The database's own encryption is what
        // seals both (docs/THREAT-MODEL.md, "Contact keys", "Contacts at rest").
        5: """
        CREATE TABLE IF NOT EXISTS contacts (digest BLOB PRIMARY KEY, wallet BLOB NOT NULL, record BLOB NOT NULL,
                                             secret BLOB NOT NULL, removed INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE IF NOT EXISTS contact_keys (sequence INTEGER PRIMARY KEY, seed BLOB NOT NULL);
        """,
        // Version 6 (the clearing, docs/CLEARING.md §2.7): per issuer, the latest cosignature of this wallet's
        // checkpoint by the issuer's clearing with the signed tree head its list was last checked against, and
        // the clearing's list as its increments in version order. All are signed by the clearing (the
        // increments chain to the list head inside the signed tree head), so a row changed by hand fails its
        // check when it is read; the listings in force are derived from the increments, never stored apart.
        6: """
        CREATE TABLE IF NOT EXISTS clearing_cosignatures (issuer BLOB PRIMARY KEY, encoded BLOB NOT NULL,
                                                          list_head BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS clearing_list (issuer BLOB NOT NULL, version INTEGER NOT NULL, encoded BLOB NOT NULL,
                                                  PRIMARY KEY (issuer, version));
        """,
    ]

    private init(database: Database, path: String) {
        self.database = database
        self.path = path
    }

    /// Creates a new database file; an existing file is never overwritten.
    public static func create(path: String, key: SecretBytes, walletID: WalletID) throws -> LedgerStore {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.walletExists, "a ledger already exists at \(path); it is never recreated")
        }
        let store = LedgerStore(database: try Database(path: path, key: key, create: true), path: path)
        try store.configure()
        try store.migrate()
        try store.database.transaction {
            try store.database.prepare("INSERT INTO meta (name, value) VALUES ('wallet-id', ?)").bind([
                .blob(walletID.bytes)
            ]).run()
        }
        return store
    }

    /// Opens an existing database with its key. Failures say which: corruption (the salt matches but the
    /// file cannot be read), another wallet's database (the salt differs), or a missing file.
    public static func open(path: String, key: SecretBytes, expectedSalt: [UInt8], walletID: WalletID) throws
        -> LedgerStore
    {
        try checkFile(path, expectedSalt: expectedSalt)
        let store = LedgerStore(database: try Database(path: path, key: key, create: false), path: path)
        try store.explainCorruption {
            try store.configure()
            // Before any migration, so a wallet this secure refuses is left as its own secure wrote it.
            if let (_, latest) = try store.latestCheckpoint() { _ = try decodeOwnCheckpoint(latest) }
            try store.migrate()
        }
        guard try store.walletID() == walletID else {
            throw StoreError(.foreignDatabase, "\(path) belongs to another wallet")
        }
        return store
    }

    /// Opens an existing database for reading only, as one WAL snapshot: a read transaction begins here
    /// and lasts as long as the store, so every read sees the ledger as it was at this moment while a
    /// writer in another process goes on appending. It takes no lock and writes nothing: no pragma that
    /// writes, no migration (a file on an older schema must be opened by a writing command first), and
    /// SQLite never checkpoints on closing a read-only connection.
    public static func openForReading(
        path: String, key: SecretBytes, expectedSalt: [UInt8],
        walletID: WalletID
    ) throws -> LedgerStore {
        try checkFile(path, expectedSalt: expectedSalt)
        let store = LedgerStore(database: try Database(path: path, key: key, create: false, readOnly: true), path: path)
        try store.explainCorruption {
            // A deferred BEGIN takes its snapshot at the first read, which is the key check just after it.
            try store.database.execute("BEGIN")
            _ = try store.database.prepare("SELECT count(*) FROM sqlite_master").step()
        }
        let statement = try store.database.prepare("PRAGMA user_version")
        _ = try statement.step()
        let version = statement.integer(0)
        guard version <= Self.schemaVersion else {
            throw StoreError(
                .schemaTooNew, "the ledger was written by a newer secure (schema \(version)); upgrade secure")
        }
        guard version == Self.schemaVersion else {
            throw StoreError(
                .schemaOutdated,
                "the ledger is on schema \(version), which this secure reads only after "
                    + "upgrading it; `secure ledger repair` upgrades it")
        }
        guard try store.walletID() == walletID else {
            throw StoreError(.foreignDatabase, "\(path) belongs to another wallet")
        }
        return store
    }

    /// The wallet's own signed checkpoint, or nil when it does not decode. A checkpoint of an older version
    /// (version 1, before the index commitment D) is a wallet made before that change: it is refused with why,
    /// not migrated, since its signed history cannot be rewritten to commit to D.
    public static func decodeOwnCheckpoint(_ bytes: [UInt8]) throws -> SignedCheckpoint? {
        do {
            return try SignedCheckpoint.decode(bytes)
        } catch let error as FormatError
            where error.code == .unsupportedVersion && bytes.first == SignedCheckpoint.encodingVersion
        {
            // The wrapper is this version's and the checkpoint inside it is not.
            throw StoreError(
                .schemaOutdated,
                "this wallet was made by an older secure (\(error)): since checkpoint version "
                    + "\(Checkpoint.encodingVersion) every checkpoint commits to the wallet's index (D), and signed "
                    + "history cannot be rewritten to add it, so this secure does not open it. The secure that made "
                    + "it still can; move the money to a new wallet with that one")
        } catch {
            return nil
        }
    }

    /// The checks before a database is opened: it exists, and its salt is this wallet's.
    private static func checkFile(_ path: String, expectedSalt: [UInt8]) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(
                .walletMissing,
                "the ledger database \(path) is missing; restore it from a backup. "
                    + "The wallet is never silently recreated")
        }
        let salt = try fileSalt(path)
        guard salt == expectedSalt else {
            throw StoreError(
                .foreignDatabase,
                "\(path) is not this wallet's database (its salt differs from the one recorded "
                    + "with the wrapped key); was another wallet's file copied here?")
        }
    }

    /// Runs the first reads of an open, saying what a corrupted file means.
    private func explainCorruption(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as StoreError where error.code == .corrupted {
            throw StoreError(
                .corrupted,
                "the ledger database \(path) is corrupted: the key is right (it matches the key-check "
                    + "value) and the file is this wallet's (its salt matches), but SQLCipher cannot read it. Restore a backup, "
                    + "then `secure ledger verify`")
        }
    }

    /// The first 16 bytes of a database file: SQLCipher's random salt.
    public static func fileSalt(_ path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreError(.io, "cannot read \(path)")
        }
        defer { try? handle.close() }
        let bytes = Array(handle.readData(ofLength: WrappedKeyFile.saltByteCount))
        guard bytes.count == WrappedKeyFile.saltByteCount else {
            throw StoreError(.corrupted, "the ledger database \(path) is truncated (shorter than its 16-byte salt)")
        }
        return bytes
    }

    private func configure() throws {
        // Reading the schema is the first access that needs the key; a bad file fails here.
        _ = try database.prepare("SELECT count(*) FROM sqlite_master").step()
        try database.execute("PRAGMA journal_mode = WAL")
        try database.execute("PRAGMA synchronous = FULL")
        try database.execute("PRAGMA foreign_keys = ON")
    }

    private func migrate() throws {
        // The statement is finalized before any migration runs: SQLite refuses DROP TABLE while a statement
        // is still open ("database table is locked").
        var version = try {
            let statement = try database.prepare("PRAGMA user_version")
            _ = try statement.step()
            return statement.integer(0)
        }()
        guard version <= Self.schemaVersion else {
            throw StoreError(
                .schemaTooNew, "the ledger was written by a newer secure (schema \(version)); upgrade secure")
        }
        while version < Self.schemaVersion {
            let next = version + 1
            guard let sql = Self.migrations[next] else { preconditionFailure("no migration to schema \(next)") }
            try database.transaction {
                try database.execute(sql)
                // Version 3 also adds a column; SQLite has no ADD COLUMN IF NOT EXISTS.
                if next == 3, try !columnExists("outgoing", "payee_key_sequence") {
                    try database.execute(
                        "ALTER TABLE outgoing ADD COLUMN payee_key_sequence INTEGER NOT NULL DEFAULT 0")
                }
                try database.execute("PRAGMA user_version = \(next)")
            }
            version = next
        }
    }

    private func columnExists(_ table: String, _ column: String) throws -> Bool {
        // SQLite 3.15 (SQLCipher 3.4.1) has no pragma_table_info() table function: read the pragma's rows.
        let statement = try database.prepare("PRAGMA table_info(\(table))")
        while try statement.step() {
            if statement.text(1) == column { return true }
        }
        return false
    }

    /// The wallet id recorded at creation.
    public func walletID() throws -> WalletID {
        let statement = try database.prepare("SELECT value FROM meta WHERE name = 'wallet-id'")
        guard try statement.step() else { throw StoreError(.corrupted, "the ledger has no wallet id") }
        guard let walletID = WalletID(bytes: statement.blob(0)) else {
            throw StoreError(.corrupted, "the ledger's stored wallet id is not \(WalletID.byteCount) bytes")
        }
        return walletID
    }

    // MARK: Appending

    /// One entry's append, all in one transaction.
    public struct Append {
        public let entry: LedgerEntry
        /// The signed checkpoint that covers the new entry.
        public let checkpoint: [UInt8]
        /// The new size the checkpoint commits to.
        public let checkpointSize: UInt64

        public init(entry: LedgerEntry, checkpoint: [UInt8], checkpointSize: UInt64) {
            self.entry = entry
            self.checkpoint = checkpoint
            self.checkpointSize = checkpointSize
        }
    }

    /// What the caller signs inside the append's transaction: the signed checkpoint over the new size, with
    /// the index commitment D the store passed in, and the transfer sent with the entry (whose signed bytes
    /// carry that checkpoint).
    public struct Seal {
        /// The signed checkpoint's encoding.
        public let checkpoint: [UInt8]
        /// The row of the transfer sent, when the append `sends` one.
        public let outgoing: Outgoing?

        public init(checkpoint: [UInt8], outgoing: Outgoing? = nil) {
            self.checkpoint = checkpoint
            self.outgoing = outgoing
        }
    }

    /// The index tables' D as an append finds them and as it leaves them.
    public struct IndexChange: Sendable {
        /// D of the tables before this append's rows, or nil when a row holds a value of a type the wallet
        /// never writes (a text where a blob belongs): the caller compares it with its latest checkpoint's D,
        /// so rows rewritten while the wallet was open are never signed over.
        public let before: Digest32?
        /// D of the tables with this append's rows: what the new checkpoint commits to.
        public let after: Digest32
    }

    /// A payment out confirmed by this append: its `outgoing` row becomes confirmed, with the receipt, in
    /// the confirmation entry's own transaction, so the checkpoint's D covers the new status.
    public typealias Confirmation = (transferID: TransferID, receipt: [UInt8])

    /// Appends entries and one checkpoint over them in one durable transaction, with the Merkle tree's compact
    /// range after them (so appending after an open needs no leaf reads). Positions must continue the ledger.
    ///
    /// Inside the transaction, one pass over `statements` and `outgoing` in their key order computes D twice
    /// (`IndexChange`): of the rows found, and of the rows with the ones this append writes merged in (the
    /// entries' statement rows, the transfer it `sends` as pending, the payment it `confirms`). `seal` checks
    /// the first and signs the checkpoint over the second; then exactly those rows are written, from the same
    /// values (`LedgerIndex.statementRow(of:)`), with the checkpoint. If `seal` throws, nothing is written.
    ///
    /// `contactKey`, with the entry of a key event that names a contact key, stores that key's seed under the
    /// event's sequence in the same transaction, so the event and its seed are committed together or not at all.
    public func append(
        _ entries: [LedgerEntry], treePeaks: MerkleCompactRange, sends sent: TransferID? = nil,
        confirms confirmation: Confirmation? = nil, consumes readyRecord: ReadyRecordUse? = nil,
        contacts contactChange: ContactChange? = nil, contactKey: ContactKeySeed? = nil,
        seal: (IndexChange) throws -> Seal
    ) throws {
        try database.transaction {
            if let readyRecord { try consume(readyRecord) }
            if let contactChange { try write(contactChange) }
            let change = try scanIndex(
                adding: entries.compactMap(LedgerIndex.statementRow(of:)),
                sending: sent.map {
                    LedgerIndex.OutgoingRow(transferID: $0.bytes, status: OutgoingStatus.pending.rawValue)
                },
                confirming: confirmation?.transferID)
            let sealed = try seal(change)
            if let sent {
                guard let outgoing = sealed.outgoing, outgoing.transferID == sent,
                    let position = entries.last?.position, outgoing.position == position
                else { preconditionFailure("an append that sends a transfer is sealed with that transfer's row") }
                try database.prepare(
                    "INSERT INTO outgoing (transfer_id, position, signed, status, message, payee_key_sequence) "
                        + "VALUES (?, ?, ?, ?, ?, ?)"
                )
                .bind([
                    .blob(outgoing.transferID.bytes), try .count(outgoing.position), .blob(outgoing.signed),
                    .integer(OutgoingStatus.pending.rawValue), outgoing.message.map { .blob($0) } ?? .null,
                    try .count(outgoing.payeeKeySequence),
                ]).run()
            } else {
                precondition(sealed.outgoing == nil, "a transfer row is written only by an append that sends it")
            }
            if let confirmation {
                try database.prepare("UPDATE outgoing SET status = ?, receipt = ? WHERE transfer_id = ?")
                    .bind([
                        .integer(OutgoingStatus.confirmed.rawValue), .blob(confirmation.receipt),
                        .blob(confirmation.transferID.bytes),
                    ]).run()
            }
            try writeEntries(entries, treePeaks: treePeaks)
            if let contactKey { try insertContactKeySeed(contactKey) }
            try database.prepare("INSERT OR REPLACE INTO checkpoints (size, encoded) VALUES (?, ?)")
                .bind([try .count(treePeaks.size), .blob(sealed.checkpoint)]).run()
        }
    }

    /// The seed of a contact key and the sequence of the key event that names it.
    public typealias ContactKeySeed = (sequence: UInt64, seed: SecretBytes)

    /// The seed length: ML-KEM's d ‖ z (FIPS 203 key generation from a seed).
    public static let contactKeySeedByteCount = 64

    /// A seed is written once per key event and never replaced: a second seed for one sequence is refused.
    private func insertContactKeySeed(_ contactKey: ContactKeySeed) throws {
        precondition(contactKey.seed.count == Self.contactKeySeedByteCount, "a contact key seed is 64 bytes")
        // A UNIQUE failure here (a row left for a sequence no committed event has) rolls the append back.
        try database.prepare("INSERT INTO contact_keys (sequence, seed) VALUES (?, ?)")
            .bind([try .count(contactKey.sequence), .secret(contactKey.seed)]).run()
    }

    /// The seed of the contact key that key event `sequence` names, straight into wiped-on-release memory; nil
    /// when there is none. Whether it is that event's key (its digest) is the caller's to check.
    public func contactKeySeed(sequence: UInt64) throws -> SecretBytes? {
        let statement = try database.prepare("SELECT seed FROM contact_keys WHERE sequence = ?")
            .bind([try .count(sequence)])
        guard try statement.step() else { return nil }
        return statement.secretBlob(0)
    }

    /// The sequences that have a stored contact key seed, in order.
    public func contactKeySequences() throws -> [UInt64] {
        let statement = try database.prepare("SELECT sequence FROM contact_keys ORDER BY sequence")
        var sequences: [UInt64] = []
        while try statement.step() { sequences.append(UInt64(bitPattern: statement.integer(0))) }
        return sequences
    }

    /// A ready record that a credit (or a refusal) consumes in its own transaction: the record of
    /// (offer id, payer), marked with the transfer that used it. An unconsumed record must exist.
    public typealias ReadyRecordUse = (offerID: OfferID, payer: WalletID, transferID: TransferID)

    /// Appends many entries and one signed checkpoint that covers them all (its size is the ledger's new
    /// size) in one durable transaction: a bulk import, or a benchmark fixture, pays one commit and one
    /// signature for the batch instead of one per entry. Positions must continue the ledger. `seal` signs
    /// the checkpoint over D, as in `append`.
    public func appendBatch(
        _ entries: [LedgerEntry], treePeaks: MerkleCompactRange, seal: (IndexChange) throws -> [UInt8]
    ) throws {
        try append(entries, treePeaks: treePeaks) { Seal(checkpoint: try seal($0)) }
    }

    /// Appends entries with checkpoints signed beforehand, one per `Append`, whose D the store neither
    /// computes nor checks: only for the verification benchmark's fixture (secure-bench), whose ledger is
    /// read by `LedgerVerifier` alone and never opened as a wallet.
    @_spi(Benchmark) public func appendPresigned(_ appends: [Append], treePeaks: MerkleCompactRange) throws {
        try database.transaction {
            try writeEntries(appends.map(\.entry), treePeaks: treePeaks)
            let insertCheckpoint = try database.prepare(
                "INSERT OR REPLACE INTO checkpoints (size, encoded) VALUES (?, ?)")
            for append in appends {
                precondition(append.checkpointSize >= 1 && append.checkpointSize <= treePeaks.size)
                try insertCheckpoint.bind([try .count(append.checkpointSize), .blob(append.checkpoint)]).run()
            }
        }
    }

    private func consume(_ readyRecord: ReadyRecordUse) throws {
        try database.prepare(
            "UPDATE ready_records SET consumed_by = ? WHERE offer_id = ? AND payer = ? AND consumed_by IS NULL"
        )
        .bind([
            .blob(readyRecord.transferID.bytes), .blob(readyRecord.offerID.bytes),
            .blob(readyRecord.payer.bytes),
        ])
        .run()
        guard database.changes == 1 else {
            throw StoreError(
                .readyRecordExists,
                "the ready record of offer \(readyRecord.offerID.hex) is missing or was consumed already")
        }
    }

    /// Writes entries, their leaves and completed nodes, their statement rows, the payer checkpoints credits
    /// came with, and the tree's peaks; inside the caller's transaction.
    private func writeEntries(_ entries: [LedgerEntry], treePeaks: MerkleCompactRange) throws {
        let insertEntry = try database.prepare(
            "INSERT INTO entries (position, id, kind, encoded, link, leaf) VALUES (?, ?, ?, ?, ?, ?)")
        let insertStatement = try database.prepare(
            "INSERT INTO statements (signer, id, kind, digest, position) VALUES (?, ?, ?, ?, ?)")
        let insertNode = try database.prepare("INSERT OR REPLACE INTO nodes (level, idx, hash) VALUES (?, ?, ?)")
        var expected = try size()
        var range = try self.treePeaks()
        for entry in entries {
            precondition(entry.position == expected, "append out of order: \(entry.position) after size \(expected)")
            let encoded = entry.encoded
            let leaf = Merkle.leafHash(encoded)
            try insertEntry.bind([
                try .count(entry.position), .blob(entry.id.bytes), .integer(Int64(entry.kind.rawValue)),
                .blob(encoded), .blob(entry.link.bytes), .blob(leaf.bytes),
            ]).run()
            for (level, index, hash) in Self.completedNodes(range, position: entry.position, leaf: leaf) {
                try insertNode.bind([.integer(Int64(level)), try .count(index), .blob(hash.bytes)]).run()
            }
            range.append(leafHash: leaf)
            if let row = LedgerIndex.statementRow(of: entry) {
                try insertStatement.bind([
                    .blob(row.signer), .blob(row.id), .integer(row.kind), .blob(row.digest),
                    try .count(entry.position),
                ]).run()
            }
            // A credit keeps the payer's checkpoint it came with, in the same transaction: a crash after the
            // credit must not leave the payee without the checkpoint that later fork checks compare against.
            if entry.kind == .paymentIn || entry.kind == .redemption,
                let transfer = try? SignedTransfer.decode(entry.payload)
            {
                let checkpoint = transfer.payload.checkpoint
                try database.prepare(
                    "INSERT OR IGNORE INTO peer_checkpoints (wallet, size, encoded) VALUES (?, ?, ?)"
                )
                .bind([
                    .blob(checkpoint.checkpoint.walletID.bytes), try .count(checkpoint.checkpoint.size),
                    .blob(checkpoint.encoded),
                ]).run()
            }
            expected += 1
        }
        precondition(range == treePeaks, "the caller's tree does not match the appended entries")
        try database.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES ('merkle-peaks', ?)")
            .bind([.blob(Self.encodePeaks(range))]).run()
    }

    /// D of the `statements` and `outgoing` tables as this connection sees them, or nil when a row holds a
    /// value of a type the wallet never writes: one pass over each table in its key order, in O(n) time and
    /// O(1) memory, with no entry read or replayed. What an open compares with its latest checkpoint's D.
    public func indexDigest() throws -> Digest32? {
        try scanIndex(adding: [], sending: nil, confirming: nil).before
    }

    /// One pass over the index tables in D's order, hashing the rows found (`before`) and, beside them, the
    /// rows with `adding` and `sending` merged in and `confirming`'s status set to confirmed (`after`).
    private func scanIndex(
        adding: [LedgerIndex.StatementRow], sending: LedgerIndex.OutgoingRow?, confirming: TransferID?
    ) throws -> IndexChange {
        var before = LedgerIndex.Hasher(), after = LedgerIndex.Hasher()
        var wellTyped = true
        // Every row the wallet writes holds blobs and integers; a value of another type (which SQLite's
        // BLOB columns keep as given) could hash like the genuine one yet never match a lookup.
        let statements = try database.prepare(
            "SELECT signer, id, kind, digest, position, typeof(signer) = 'blob' AND typeof(id) = 'blob' "
                + "AND typeof(kind) = 'integer' AND typeof(digest) = 'blob' AND typeof(position) = 'integer' "
                + "FROM statements INDEXED BY statements_committed ORDER BY signer, id")
        var pending = adding.sorted { $0.precedes($1) }[...]
        while try statements.step() {
            let row = LedgerIndex.StatementRow(
                signer: statements.blob(0), id: statements.blob(1), kind: statements.integer(2),
                digest: statements.blob(3), position: statements.integer(4))
            wellTyped = wellTyped && statements.integer(5) == 1
            while let next = pending.first, next.precedes(row) { after.add(pending.removeFirst()) }
            before.add(row)
            after.add(row)
        }
        for row in pending { after.add(row) }
        let outgoing = try database.prepare(
            "SELECT transfer_id, status, typeof(transfer_id) = 'blob' AND typeof(status) = 'integer' "
                + "FROM outgoing INDEXED BY outgoing_committed ORDER BY transfer_id")
        var sending = sending
        while try outgoing.step() {
            let row = LedgerIndex.OutgoingRow(transferID: outgoing.blob(0), status: outgoing.integer(1))
            wellTyped = wellTyped && outgoing.integer(2) == 1
            if let next = sending, next.transferID.lexicographicallyPrecedes(row.transferID) {
                after.add(next)
                sending = nil
            }
            before.add(row)
            after.add(
                row.transferID == confirming?.bytes
                    ? LedgerIndex.OutgoingRow(transferID: row.transferID, status: OutgoingStatus.confirmed.rawValue)
                    : row)
        }
        if let sending { after.add(sending) }
        let found = before.finalize()
        return IndexChange(before: wellTyped ? found : nil, after: after.finalize())
    }

    /// The perfect subtrees that leaf `position` completes, as (level, index, hash): the same carries the
    /// compact range makes. Stored, they let any RFC 9162 proof be built with O(log n) reads.
    static func completedNodes(_ range: MerkleCompactRange, position: UInt64, leaf: Digest32) -> [(
        Int, UInt64, Digest32
    )] {
        var nodes: [(Int, UInt64, Digest32)] = []
        var hash = leaf
        var peaks = range.peaks
        var level = 0
        while (position >> UInt64(level)) & 1 == 1 {
            hash = Merkle.nodeHash(peaks.removeLast(), hash)
            level += 1
            nodes.append((level, position >> UInt64(level), hash))
        }
        return nodes
    }

    /// MTH(D[lo:hi]) from stored nodes: the range splits into aligned perfect subtrees, folded from the right.
    public func rangeHash(_ lo: UInt64, _ hi: UInt64) throws -> Digest32 {
        precondition(lo < hi)
        var blocks: [Digest32] = []
        var start = lo
        while start < hi {
            var level = 63 - (hi - start).leadingZeroBitCount
            while start & ((UInt64(1) << UInt64(level)) - 1) != 0 { level -= 1 }
            blocks.append(try node(level: level, index: start >> UInt64(level)))
            start += UInt64(1) << UInt64(level)
        }
        var hash = blocks.removeLast()
        for block in blocks.reversed() { hash = Merkle.nodeHash(block, hash) }
        return hash
    }

    private func node(level: Int, index: UInt64) throws -> Digest32 {
        let statement =
            level == 0
            ? try database.prepare("SELECT leaf FROM entries WHERE position = ?").bind([try .count(index)])
            : try database.prepare("SELECT hash FROM nodes WHERE level = ? AND idx = ?").bind([
                .integer(Int64(level)), try .count(index),
            ])
        guard try statement.step() else {
            throw StoreError(.corrupted, "the Merkle node (\(level), \(index)) is missing")
        }
        return try Self.digest(statement.blob(0), "the Merkle node (\(level), \(index))")
    }

    /// The RFC 9162 inclusion proof of leaf `index` in the tree of `size` leaves.
    public func inclusionProof(index: UInt64, size: UInt64) throws -> [Digest32] {
        try Merkle.inclusionProof(index: index, size: size, rangeHash: rangeHash)
    }

    /// The RFC 9162 consistency proof from `oldSize` to `newSize`.
    public func consistencyProof(oldSize: UInt64, newSize: UInt64) throws -> [Digest32] {
        try Merkle.consistencyProof(oldSize: oldSize, newSize: newSize, rangeHash: rangeHash)
    }

    /// The Merkle tree's compact range after the last append.
    public func treePeaks() throws -> MerkleCompactRange {
        let statement = try database.prepare("SELECT value FROM meta WHERE name = 'merkle-peaks'")
        guard try statement.step() else { return MerkleCompactRange() }
        let bytes = statement.blob(0)
        var reader = ByteReader(bytes)
        guard let size = reader.readUInt64(), reader.remainingCount % Digest32.byteCount == 0 else {
            throw StoreError(.corrupted, "the stored Merkle peaks are malformed")
        }
        var peaks: [Digest32] = []
        while let peak = reader.read(Digest32.self) { peaks.append(peak) }
        do {
            return try MerkleCompactRange(size: size, peaks: peaks)
        } catch {
            throw StoreError(.corrupted, "the stored Merkle peaks do not fit their size")
        }
    }

    static func encodePeaks(_ range: MerkleCompactRange) -> [UInt8] {
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: range.size >> (56 - 8 * UInt64($0))) }
        for peak in range.peaks { bytes += peak.bytes }
        return bytes
    }

    /// A value from the meta table (trusted issuers, settings).
    public func meta(_ name: String) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT value FROM meta WHERE name = ?").bind([.text(name)])
        return try statement.step() ? statement.blob(0) : nil
    }

    /// Sets a value in the meta table.
    public func setMeta(_ name: String, _ value: [UInt8]) throws {
        try database.transaction {
            try database.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)").bind([
                .text(name), .blob(value),
            ]).run()
        }
    }

    /// Entries of the given kinds, in order (budget changes at open: there are few).
    public func entries(kind: EntryKind) throws -> [LedgerEntry] {
        let statement = try database.prepare("SELECT position, encoded FROM entries WHERE kind = ? ORDER BY position")
            .bind([.integer(Int64(kind.rawValue))])
        var result: [LedgerEntry] = []
        while try statement.step() {
            result.append(try decodeEntry(statement.blob(1), position: UInt64(statement.integer(0))))
        }
        return result
    }

    // MARK: Reading

    /// The number of entries.
    public func size() throws -> UInt64 {
        let statement = try database.prepare("SELECT coalesce(max(position) + 1, 0) FROM entries")
        _ = try statement.step()
        return UInt64(statement.integer(0))
    }

    /// The entry at a position, decoded; nil past the end.
    public func entry(at position: UInt64) throws -> LedgerEntry? {
        let statement = try database.prepare("SELECT encoded FROM entries WHERE position = ?").bind([
            try .count(position)
        ])
        guard try statement.step() else { return nil }
        return try decodeEntry(statement.blob(0), position: position)
    }

    /// The entry with a given id.
    public func entry(id: StatementID) throws -> LedgerEntry? {
        let statement = try database.prepare("SELECT position, encoded FROM entries WHERE id = ?").bind([
            .blob(id.bytes)
        ])
        guard try statement.step() else { return nil }
        return try decodeEntry(statement.blob(1), position: UInt64(statement.integer(0)))
    }

    /// Calls `body` with every entry in [from, to), in order, decoding lazily.
    public func forEachEntry(from: UInt64 = 0, to: UInt64 = .max, _ body: (LedgerEntry) throws -> Void) throws {
        let statement = try database.prepare(
            "SELECT position, encoded FROM entries WHERE position >= ? AND position < ? ORDER BY position"
        )
        .bind([try .count(from), .integer(Int64(min(to, UInt64(Int64.max))))])
        while try statement.step() {
            try body(try decodeEntry(statement.blob(1), position: UInt64(statement.integer(0))))
        }
    }

    /// Calls `body` with every entry of `kind` from position `from` on, in order (a payee's recent credits).
    public func forEachEntry(kind: EntryKind, from: UInt64, _ body: (LedgerEntry) throws -> Void) throws {
        let statement = try database.prepare(
            "SELECT position, encoded FROM entries WHERE kind = ? AND position >= ? ORDER BY position"
        )
        .bind([.integer(Int64(kind.rawValue)), try .count(from)])
        while try statement.step() {
            try body(try decodeEntry(statement.blob(1), position: UInt64(statement.integer(0))))
        }
    }

    /// The raw encodings of entries in [from, to), in order (for parallel verification).
    public func encodedEntries(from: UInt64, to: UInt64) throws -> [[UInt8]] {
        let statement = try database.prepare(
            "SELECT encoded FROM entries WHERE position >= ? AND position < ? ORDER BY position"
        )
        .bind([try .count(from), try .count(to)])
        var result: [[UInt8]] = []
        while try statement.step() { result.append(statement.blob(0)) }
        return result
    }

    /// Stored leaf hashes of entries in [from, to), in order.
    public func leafHashes(from: UInt64 = 0, to: UInt64) throws -> [Digest32] {
        let statement = try database.prepare(
            "SELECT leaf FROM entries WHERE position >= ? AND position < ? ORDER BY position"
        )
        .bind([try .count(from), try .count(to)])
        var result: [Digest32] = []
        while try statement.step() { result.append(try Self.digest(statement.blob(0), "a stored leaf hash")) }
        return result
    }

    private func decodeEntry(_ bytes: [UInt8], position: UInt64) throws -> LedgerEntry {
        do {
            guard let entry = try LedgerEntry.decode(bytes) else {
                throw StoreError(.corrupted, "entry \(position) is truncated")
            }
            return entry
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.corrupted, "entry \(position) does not decode: \(error)")
        }
    }

    /// The latest signed checkpoint and its size.
    public func latestCheckpoint() throws -> (size: UInt64, encoded: [UInt8])? {
        let statement = try database.prepare("SELECT size, encoded FROM checkpoints ORDER BY size DESC LIMIT 1")
        guard try statement.step() else { return nil }
        return (UInt64(statement.integer(0)), statement.blob(1))
    }

    /// The signed checkpoint of a given size.
    public func checkpoint(size: UInt64) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT encoded FROM checkpoints WHERE size = ?").bind([
            try .count(size)
        ])
        return try statement.step() ? statement.blob(0) : nil
    }

    /// The stored checkpoints with sizes in (after, through], ascending, read in one query (a full
    /// verification reads them alongside each batch of entries).
    public func encodedCheckpoints(after: UInt64, through: UInt64) throws -> [(size: UInt64, encoded: [UInt8])] {
        let statement = try database.prepare(
            "SELECT size, encoded FROM checkpoints WHERE size > ? AND size <= ? ORDER BY size"
        )
        .bind([try .count(after), try .count(through)])
        var result: [(size: UInt64, encoded: [UInt8])] = []
        while try statement.step() { result.append((UInt64(statement.integer(0)), statement.blob(1))) }
        return result
    }

    /// Every stored checkpoint size, ascending.
    public func checkpointSizes() throws -> [UInt64] {
        let statement = try database.prepare("SELECT size FROM checkpoints ORDER BY size")
        var sizes: [UInt64] = []
        while try statement.step() { sizes.append(UInt64(statement.integer(0))) }
        return sizes
    }

    /// The entry that recorded a signed statement, by (signer, id): its payload digest and position.
    public func statement(signer: Digest32, id: StatementID) throws -> (digest: Digest32, position: UInt64)? {
        let statement = try database.prepare("SELECT digest, position FROM statements WHERE signer = ? AND id = ?")
            .bind([.blob(signer.bytes), .blob(id.bytes)])
        guard try statement.step() else { return nil }
        return (try Self.digest(statement.blob(0), "a statement's payload digest"), UInt64(statement.integer(1)))
    }

    /// A SHA-256 value read back from the database; a wrong length means the file went bad.
    private static func digest(_ bytes: [UInt8], _ what: String) throws -> Digest32 {
        guard let digest = Digest32(bytes: bytes) else {
            throw StoreError(.corrupted, "\(what) is not \(Digest32.byteCount) bytes")
        }
        return digest
    }

    // MARK: Peers and evidence

    /// Keeps a peer's signed checkpoint (a payee keeps the payer's).
    public func storePeerCheckpoint(wallet: WalletID, size: UInt64, encoded: [UInt8]) throws {
        try database.transaction {
            try database.prepare("INSERT OR IGNORE INTO peer_checkpoints (wallet, size, encoded) VALUES (?, ?, ?)")
                .bind([.blob(wallet.bytes), try .count(size), .blob(encoded)]).run()
        }
    }

    /// A peer's latest stored checkpoint.
    public func latestPeerCheckpoint(wallet: WalletID) throws -> (size: UInt64, encoded: [UInt8])? {
        let statement = try database.prepare(
            "SELECT size, encoded FROM peer_checkpoints WHERE wallet = ? ORDER BY size DESC LIMIT 1"
        )
        .bind([.blob(wallet.bytes)])
        guard try statement.step() else { return nil }
        return (UInt64(statement.integer(0)), statement.blob(1))
    }

    /// A peer's stored checkpoint of a size.
    public func peerCheckpoint(wallet: WalletID, size: UInt64) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT encoded FROM peer_checkpoints WHERE wallet = ? AND size = ?")
            .bind([.blob(wallet.bytes), try .count(size)])
        return try statement.step() ? statement.blob(0) : nil
    }

    /// Every stored checkpoint of a peer, smallest first.
    public func peerCheckpoints(wallet: WalletID) throws -> [[UInt8]] {
        let statement = try database.prepare("SELECT encoded FROM peer_checkpoints WHERE wallet = ? ORDER BY size")
            .bind([.blob(wallet.bytes)])
        var result: [[UInt8]] = []
        while try statement.step() { result.append(statement.blob(0)) }
        return result
    }

    /// Keeps a peer's consistency proof from (fromSize, fromRoot) to its checkpoint of `toSize`, which this
    /// wallet holds; keeping it twice is a no-op.
    public func storePeerProof(
        wallet: WalletID, fromSize: UInt64, fromRoot: Digest32, toSize: UInt64, proof: [Digest32]
    ) throws {
        try database.transaction {
            try database.prepare(
                "INSERT OR IGNORE INTO peer_proofs (wallet, from_size, from_root, to_size, proof) VALUES (?, ?, ?, ?, ?)"
            )
            .bind([
                .blob(wallet.bytes), try .count(fromSize), .blob(fromRoot.bytes), try .count(toSize),
                .blob(proof.flatMap(\.bytes)),
            ]).run()
        }
    }

    /// A peer's kept consistency proofs: (from size, from root, to size, proof hashes).
    public func peerProofs(wallet: WalletID) throws -> [(
        fromSize: UInt64, fromRoot: Digest32, toSize: UInt64, proof: [Digest32]
    )] {
        let statement = try database.prepare(
            "SELECT from_size, from_root, to_size, proof FROM peer_proofs WHERE wallet = ? ORDER BY from_size"
        ).bind([.blob(wallet.bytes)])
        var result: [(UInt64, Digest32, UInt64, [Digest32])] = []
        while try statement.step() {
            let bytes = statement.blob(3)
            guard bytes.count % Digest32.byteCount == 0 else {
                throw StoreError(.corrupted, "a kept consistency proof is not whole hashes")
            }
            let proof = try stride(from: 0, to: bytes.count, by: Digest32.byteCount).map {
                try Self.digest(Array(bytes[$0..<$0 + Digest32.byteCount]), "a kept proof hash")
            }
            result.append(
                (
                    UInt64(statement.integer(0)), try Self.digest(statement.blob(1), "a kept root"),
                    UInt64(statement.integer(2)), proof
                ))
        }
        return result
    }

    /// Keeps two checkpoints of a peer that nothing proves consistent or inconsistent, for the issuer's
    /// clearing to settle; keeping them twice is a no-op.
    public func storeInconsistency(wallet: WalletID, held: [UInt8], offered: [UInt8]) throws {
        try database.transaction {
            try database.prepare("INSERT OR IGNORE INTO inconsistencies (wallet, held, offered) VALUES (?, ?, ?)")
                .bind([.blob(wallet.bytes), .blob(held), .blob(offered)]).run()
        }
    }

    /// The unproven inconsistencies kept about a peer: (held, offered) signed checkpoint encodings.
    public func inconsistencies(wallet: WalletID) throws -> [(held: [UInt8], offered: [UInt8])] {
        let statement = try database.prepare("SELECT held, offered FROM inconsistencies WHERE wallet = ?")
            .bind([.blob(wallet.bytes)])
        var result: [([UInt8], [UInt8])] = []
        while try statement.step() { result.append((statement.blob(0), statement.blob(1))) }
        return result
    }

    /// Keeps fork evidence by its digest; keeping the same evidence twice is a no-op. With `banning`, the
    /// evidence also bars that wallet from paying this one (`banningEvidence(against:)`): only for evidence
    /// this wallet found itself, from statements it checked against the signer's key-event log.
    public func storeEvidence(_ encoded: [UInt8], banning accused: WalletID? = nil) throws {
        try database.transaction {
            if let accused {
                try database.prepare("INSERT OR IGNORE INTO banning_evidence (digest, accused) VALUES (?, ?)")
                    .bind([.blob(EvidenceDigest(of: encoded).bytes), .blob(accused.bytes)]).run()
            }
            try database.prepare("INSERT OR IGNORE INTO evidence (digest, encoded) VALUES (?, ?)")
                .bind([.blob(EvidenceDigest(of: encoded).bytes), .blob(encoded)]).run()
        }
    }

    /// The digest of evidence that bars `wallet` from paying this one, if this wallet holds any.
    public func banningEvidence(against wallet: WalletID) throws -> EvidenceDigest? {
        let statement = try database.prepare("SELECT digest FROM banning_evidence WHERE accused = ? ORDER BY digest")
            .bind([.blob(wallet.bytes)])
        guard try statement.step() else { return nil }
        guard let digest = EvidenceDigest(bytes: statement.blob(0)) else {
            throw StoreError(.corrupted, "a banning evidence digest is not \(EvidenceDigest.byteCount) bytes")
        }
        return digest
    }

    /// All evidence held.
    public func evidence() throws -> [[UInt8]] {
        let statement = try database.prepare("SELECT encoded FROM evidence ORDER BY digest")
        var result: [[UInt8]] = []
        while try statement.step() { result.append(statement.blob(0)) }
        return result
    }
}

extension LedgerStore: StatementIndex {
    // A failing read here means the database went bad under an open wallet; the append that asked
    // will fail its own write in the same way, so a miss is the safe answer.
    public func recordedStatement(signer: Digest32, id: StatementID) -> (payloadDigest: Digest32, position: UInt64)? {
        (try? statement(signer: signer, id: id)).flatMap { $0 }.map { ($0.digest, $0.position) }
    }

    // Conflict entries are not in `statements`, whose (signer, id) row keeps the first payload. They are read
    // by kind (an indexed column), and only when a delivery already conflicts with a recorded statement:
    // each one needs a second validly signed payload under a recorded id, so there are few.
    public func recordedConflict(_ statement: StatementReference) -> UInt64? {
        (try? entries(kind: .conflictingStatement))?.first { $0.statement == statement }?.position
    }

    public func paymentOut(transferID: StatementID) -> (
        amount: AssetAmount, position: UInt64, isReversed: Bool, isConfirmed: Bool
    )? {
        guard
            let row = try? database.prepare("SELECT position FROM statements WHERE kind = ? AND id = ?")
                .bind([.integer(Int64(EntryKind.paymentOut.rawValue)), .blob(transferID.bytes)]),
            (try? row.step()) == true,
            let entry = try? self.entry(at: UInt64(row.integer(0))), let amount = entry.amount
        else { return nil }
        func followed(by kind: EntryKind) -> Bool {
            (try? database.prepare("SELECT 1 FROM statements WHERE kind = ? AND id = ?")
                .bind([.integer(Int64(kind.rawValue)), .blob(transferID.bytes)]).step()) ?? false
        }
        return (amount, entry.position, followed(by: .reversal), followed(by: .confirmation))
    }
}

extension LedgerStore {
    /// The state of a transfer this wallet sent.
    public enum OutgoingStatus: Int64, Sendable {
        case pending = 0, confirmed = 1
    }

    /// A transfer sent, written in the same transaction as its debit. Its id and status are committed by
    /// the checkpoints' D; it changes only inside an append (`append(_:treePeaks:sends:confirms:consumes:seal:)`),
    /// never on its own.
    public struct Outgoing: Sendable {
        public let transferID: TransferID
        public let position: UInt64
        /// The signed transfer's encoding.
        public let signed: [UInt8]
        /// For peer payments, the whole transfer message (with the spatial proof) that a retry re-sends.
        public let message: [UInt8]?
        /// The payee's key sequence in force, by its key-event log as this wallet knew it when it paid: the
        /// payee's receipt or refusal, signed after the payee received the transfer, cannot be older.
        public let payeeKeySequence: UInt64

        public init(
            transferID: TransferID, position: UInt64, signed: [UInt8], message: [UInt8]?, payeeKeySequence: UInt64 = 0
        ) {
            self.transferID = transferID
            self.position = position
            self.signed = signed
            self.message = message
            self.payeeKeySequence = payeeKeySequence
        }
    }

    /// The stored peer message of a sent transfer, if it was sent in a peer session.
    public func outgoingMessage(transferID: TransferID) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT message FROM outgoing WHERE transfer_id = ?").bind([
            .blob(transferID.bytes)
        ])
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return statement.blob(0)
    }

    /// Keeps the signed refusal sent for a transfer, so a re-delivered transfer gets the same answer.
    public func storeRefusal(signer: Digest32, id: StatementID, signed: [UInt8]) throws {
        try database.transaction {
            try database.prepare("INSERT OR IGNORE INTO refusals (signer, id, signed) VALUES (?, ?, ?)")
                .bind([.blob(signer.bytes), .blob(id.bytes), .blob(signed)]).run()
        }
    }

    /// The signed refusal kept for a transfer.
    public func refusal(signer: Digest32, id: StatementID) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT signed FROM refusals WHERE signer = ? AND id = ?").bind([
            .blob(signer.bytes), .blob(id.bytes),
        ])
        return try statement.step() ? statement.blob(0) : nil
    }

    /// Persists a payee's ready record before it sends `ready`.
    public func storeReadyRecord(offerID: OfferID, payer: WalletID, record: [UInt8]) throws {
        try database.transaction {
            // One offer (in the request flow: one request id) is answered by one payer, once.
            guard
                try !database.prepare("SELECT 1 FROM ready_records WHERE offer_id = ?").bind([.blob(offerID.bytes)])
                    .step()
            else {
                throw StoreError(
                    .readyRecordExists,
                    "offer \(offerID.hex) already has a ready record; one offer is answered by one payer, once")
            }
            try database.prepare("INSERT INTO ready_records (offer_id, payer, record) VALUES (?, ?, ?)")
                .bind([.blob(offerID.bytes), .blob(payer.bytes), .blob(record)]).run()
        }
    }

    /// The ready records of `payer` that no transfer consumed yet: approvals it may still pay, which count
    /// against the payee's offline limit for it until they are credited (or refused).
    public func unconsumedReadyRecords(payer: WalletID) throws -> [[UInt8]] {
        let statement = try database.prepare(
            "SELECT record FROM ready_records WHERE payer = ? AND consumed_by IS NULL ORDER BY offer_id"
        ).bind([.blob(payer.bytes)])
        var records: [[UInt8]] = []
        while try statement.step() { records.append(statement.blob(0)) }
        return records
    }

    /// A persisted ready record by offer id and payer, with the transfer that consumed it, if one did.
    public func readyRecord(offerID: OfferID, payer: WalletID) throws -> (record: [UInt8], consumedBy: TransferID?)? {
        let statement = try database.prepare(
            "SELECT record, consumed_by FROM ready_records WHERE offer_id = ? AND payer = ?"
        ).bind([.blob(offerID.bytes), .blob(payer.bytes)])
        guard try statement.step() else { return nil }
        guard statement.isNull(1) else {
            guard let consumedBy = TransferID(bytes: statement.blob(1)) else {
                throw StoreError(.corrupted, "a ready record names a consuming transfer of the wrong length")
            }
            return (statement.blob(0), consumedBy)
        }
        return (statement.blob(0), nil)
    }

    /// A sent transfer's record.
    public func outgoing(transferID: TransferID) throws -> (
        position: UInt64, signed: [UInt8], status: OutgoingStatus, receipt: [UInt8]?, payeeKeySequence: UInt64
    )? {
        let statement = try database.prepare(
            "SELECT position, signed, status, receipt, payee_key_sequence FROM outgoing WHERE transfer_id = ?"
        )
        .bind([.blob(transferID.bytes)])
        guard try statement.step() else { return nil }
        return (
            UInt64(statement.integer(0)), statement.blob(1), OutgoingStatus(rawValue: statement.integer(2)) ?? .pending,
            statement.isNull(3) ? nil : statement.blob(3), UInt64(max(0, statement.integer(4)))
        )
    }

    /// Whether a statement of a kind with an id was recorded (e.g. a reversal of a transfer id).
    public func statementExists(kind: EntryKind, id: StatementID) throws -> Bool {
        try database.prepare("SELECT 1 FROM statements WHERE kind = ? AND id = ?").bind([
            .integer(Int64(kind.rawValue)), .blob(id.bytes),
        ]).step()
    }
}
