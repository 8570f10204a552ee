import SecureCore
import SecureCrypto
import SecureStore

/// Contacts: records in the encrypted `contacts` table, each added, replaced or removed by a signed
/// `settings` entry that holds only the record's SHA-256 (tags 7–9), written in the entry's own transaction.
/// Every change is an append, so it takes the token's PIN and is refused while the wallet is locked.
extension Wallet {
    /// At most this many current contacts: a person's address book, and every lookup reads them all.
    public static let contactCountMax = 1000

    /// The current contacts, by name. The table must hold exactly the records whose digests the ledger's
    /// settings entries leave current; a table changed behind the ledger's back is refused as corrupted
    /// (`ledger verify` says which rows).
    public func contacts() throws -> [ContactRecord] {
        let rows = try store.contactRows()
        guard Set(rows.map(\.digest)) == state.settings.contactDigests,
            rows.count == state.settings.contactDigests.count
        else {
            throw StoreError(
                .corrupted,
                "the contacts table does not match the ledger's contact entries: it was changed outside secure; "
                    + "run `secure ledger verify`")
        }
        return rows.map(\.record).sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// The current contact named `name` (names compare as Swift strings: canonically equivalent spellings
    /// are the same name), or nil.
    public func contact(named name: String) throws -> ContactRecord? {
        try contacts().first { $0.name == name }
    }

    /// The current contact of wallet `walletID`, or nil.
    public func contact(walletID: WalletID) throws -> ContactRecord? {
        try contacts().first { $0.walletID == walletID }
    }

    /// The pairwise secret of the current contact of `walletID`; throws `notFound` when there is none.
    public func contactSecret(walletID: WalletID) throws -> SecretBytes {
        guard let record = try contact(walletID: walletID) else {
            throw WalletError(.notFound, "wallet \(walletID.hex) is not a contact")
        }
        guard let secret = try store.contactSecret(digest: record.digest) else {
            throw StoreError(.corrupted, "contact \(record.digest.hex) has no secret")
        }
        return secret
    }

    /// Stores a new contact: appends a signed `contactAdded` entry and writes the record and its 32-byte
    /// secret in the same transaction. Refused (nothing signed) when the record is this wallet's own, when a
    /// current contact has the same wallet id (`replaceContact` changes one) or the same name, or past
    /// `contactCountMax`.
    public func addContact(_ record: ContactRecord, secret: SecretBytes) throws {
        guard secret.count == LedgerStore.contactSecretByteCount else {
            throw WalletError(
                .invalidInput, "a contact secret is \(LedgerStore.contactSecretByteCount) bytes, got \(secret.count)")
        }
        guard record.walletID != walletID else { throw WalletError(.refused, "a wallet cannot be its own contact") }
        let current = try contacts()
        if let same = current.first(where: { $0.walletID == record.walletID }) {
            throw WalletError(
                .refused,
                "wallet \(record.walletID.hex) is already the contact \(PeerText.quoted(same.name)); remove it first")
        }
        try checkNameIsFree(record.name, among: current)
        guard current.count < Self.contactCountMax else {
            throw WalletError(.refused, "this wallet already holds \(Self.contactCountMax) contacts, the most it keeps")
        }
        try appendContactChange(.contactAdded(record.digest), rows: .add(record, secret: secret))
    }

    /// Gives the contact named `name` the name `newName`: a `contactReplaced` entry from the old record's
    /// digest to the renamed record's, the secret kept.
    public func renameContact(_ name: String, to newName: String) throws {
        guard let old = try contact(named: name) else { throw Self.noContact(name) }
        if let problem = ContactName.problem(newName) { throw WalletError(.invalidInput, problem) }
        try replaceContact(old, with: try old.renamed(newName))
    }

    /// Removes the contact named `name`: a `contactRemoved` entry; the row stays, marked removed, and so does
    /// the entry that added it.
    public func removeContact(named name: String) throws {
        guard let record = try contact(named: name) else { throw Self.noContact(name) }
        try appendContactChange(.contactRemoved(record.digest), rows: .remove(record.digest))
    }

    /// Replaces a current contact's record by another of the same wallet (a newer key-event log after the
    /// contact rotated, a new name): a `contactReplaced` entry, the secret kept. Refused when `old` is not
    /// current, when `new` names another wallet or another contact's name, or when nothing changes.
    public func replaceContact(_ old: ContactRecord, with new: ContactRecord) throws {
        let current = try contacts()
        guard current.contains(old) else {
            throw WalletError(.notFound, "the contact \(PeerText.quoted(old.name)) to replace is not current")
        }
        guard new.walletID == old.walletID else {
            throw WalletError(.refused, "a contact is replaced only by a record of the same wallet")
        }
        guard new.digest != old.digest else { throw WalletError(.refused, "the new contact record is the old one") }
        try checkNameIsFree(new.name, among: current.filter { $0 != old })
        try appendContactChange(
            .contactReplaced(old: old.digest, new: new.digest), rows: .replace(old: old.digest, new: new))
    }

    private func checkNameIsFree(_ name: String, among current: [ContactRecord]) throws {
        if current.contains(where: { $0.name == name }) {
            throw WalletError(.refused, "a contact is already named \(PeerText.quoted(name)); choose another name")
        }
    }

    private static func noContact(_ name: String) -> WalletError {
        WalletError(.notFound, "no contact is named \(PeerText.quoted(name)); `secure contact list` shows them")
    }

    /// Appends the settings entry with no note (a note is part of the entry, which must name no one) and
    /// writes the rows in its transaction.
    private func appendContactChange(_ change: SettingsChange, rows: LedgerStore.ContactChange) throws {
        try append(
            { position, previous, time in
                try EntryDraft(kind: .settings, amount: nil, statement: nil, payload: change.payload)
                    .entry(position: position, id: .random(), time: time, previousLink: previous)
            }, contacts: rows)
    }
}
