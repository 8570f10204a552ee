import SecureCore
import SecureCrypto

/// The `contacts` table (schema version 5): each contact record by its digest, the digest the ledger's
/// contact settings entries hold, with the pairwise contact secret beside it (not part of the hashed record).
/// Rows change only inside the append of the settings entry that names them (`LedgerStore.append`), so the
/// table and the ledger agree after every commit; `secure ledger verify` checks that they still do.
extension LedgerStore {
    /// The pairwise contact secret's length.
    public static let contactSecretByteCount = 32

    /// One row: a record and whether it was removed (a removed contact's row stays, as its entry does).
    public struct ContactRow: Hashable, Sendable {
        /// The digest column: what the settings entries name.
        public let digest: Digest32
        /// The record.
        public let record: ContactRecord
        /// Whether a later entry removed or replaced it.
        public let removed: Bool
    }

    /// The rows an append of a contact settings entry writes, in that append's transaction.
    public enum ContactChange: Sendable {
        /// A new current row (tag 7); a removed row with the same digest becomes current again.
        case add(ContactRecord, secret: SecretBytes)
        /// The row of this digest is marked removed (tag 8).
        case remove(Digest32)
        /// The old row is marked removed and the new record becomes current with the old row's secret (tag 9).
        case replace(old: Digest32, new: ContactRecord)
    }

    /// Writes `change`'s rows; inside the caller's transaction. A row to remove or replace that is not
    /// current means the table no longer matches the ledger: the append fails and nothing is written.
    func write(_ change: ContactChange) throws {
        switch change {
        case .add(let record, let secret):
            try insertContact(record, secret: secret.copyBytes())
        case .remove(let digest):
            try markRemoved(digest)
        case .replace(let old, let new):
            guard let secret = try contactSecretBytes(digest: old) else {
                throw StoreError(.corrupted, "contact \(old.hex) has no row to replace")
            }
            try markRemoved(old)
            try insertContact(new, secret: secret)
        }
    }

    private func insertContact(_ record: ContactRecord, secret: [UInt8]) throws {
        precondition(secret.count == Self.contactSecretByteCount, "a contact secret is 32 bytes")
        try database.prepare(
            "INSERT OR REPLACE INTO contacts (digest, wallet, record, secret, removed) VALUES (?, ?, ?, ?, 0)"
        )
        .bind([.blob(record.digest.bytes), .blob(record.walletID.bytes), .blob(record.encoded), .blob(secret)])
        .run()
    }

    private func markRemoved(_ digest: Digest32) throws {
        try database.prepare("UPDATE contacts SET removed = 1 WHERE digest = ? AND removed = 0")
            .bind([.blob(digest.bytes)]).run()
        guard database.changes == 1 else {
            throw StoreError(.corrupted, "contact \(digest.hex) has no current row to remove")
        }
    }

    private func contactSecretBytes(digest: Digest32) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT secret FROM contacts WHERE digest = ? AND removed = 0")
            .bind([.blob(digest.bytes)])
        guard try statement.step() else { return nil }
        return statement.blob(0)
    }

    /// The contact rows, current ones only unless `includingRemoved`, in digest order. A row whose record does
    /// not decode, or whose digest column is not its record's digest, is refused as corrupted.
    public func contactRows(includingRemoved: Bool = false) throws -> [ContactRow] {
        let statement = try database.prepare(
            "SELECT digest, record, removed FROM contacts" + (includingRemoved ? "" : " WHERE removed = 0")
                + " ORDER BY digest")
        var rows: [ContactRow] = []
        while try statement.step() {
            guard let digest = Digest32(bytes: statement.blob(0)) else {
                throw StoreError(.corrupted, "a contact row's digest is not \(Digest32.byteCount) bytes")
            }
            let record: ContactRecord
            do {
                record = try ContactRecord.decode(statement.blob(1))
            } catch {
                throw StoreError(.corrupted, "contact \(digest.hex)'s record does not decode: \(error)")
            }
            guard record.digest == digest else {
                throw StoreError(.corrupted, "contact \(digest.hex)'s record does not hash to its digest")
            }
            rows.append(ContactRow(digest: digest, record: record, removed: statement.integer(2) != 0))
        }
        return rows
    }

    /// The pairwise secret stored beside the current contact whose record has `digest`, or nil.
    public func contactSecret(digest: Digest32) throws -> SecretBytes? {
        guard let bytes = try contactSecretBytes(digest: digest) else { return nil }
        guard bytes.count == Self.contactSecretByteCount else {
            throw StoreError(.corrupted, "contact \(digest.hex)'s secret is not \(Self.contactSecretByteCount) bytes")
        }
        return SecretBytes(bytes)
    }

    /// Each row checked on its own (`ledger verify`, "every row of every table"): the record decodes, hashes
    /// to the digest column and names the wallet column's id, the secret is 32 bytes, `removed` is 0 or 1.
    func contactRowProblems() throws -> [String] {
        let statement = try database.prepare(
            "SELECT hex(digest), digest, wallet, record, secret, removed FROM contacts")
        var problems: [String] = []
        while try statement.step() {
            let row = "table contacts, row \(statement.text(0) ?? "?")"
            guard let record = try? ContactRecord.decode(statement.blob(3)) else {
                problems.append("\(row): its record does not decode")
                continue
            }
            if record.digest.bytes != statement.blob(1) { problems.append("\(row): its record has another digest") }
            if record.walletID.bytes != statement.blob(2) { problems.append("\(row): its record names another wallet") }
            if statement.blob(4).count != Self.contactSecretByteCount {
                problems.append("\(row): its secret is not \(Self.contactSecretByteCount) bytes")
            }
            if !(0...1).contains(statement.integer(5)) { problems.append("\(row): removed is neither 0 nor 1") }
        }
        return problems
    }
}
