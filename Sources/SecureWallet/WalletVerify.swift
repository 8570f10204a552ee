import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

extension Wallet {
    /// The full verification `secure ledger verify` runs: the replay with every entry's signed statement
    /// checked (`EntryStatementCheck`, with this wallet's trusted issuers, peers' logs and sent transfers),
    /// then the database as a file: `PRAGMA integrity_check` and every row of every table decoded, and the
    /// index tables against the latest checkpoint's D.
    /// Opened for appending, the WAL is checkpointed into the file first; opened for reading (the usual
    /// `ledger verify`), the wallet writes nothing to the database, and its reads go through the WAL.
    ///
    /// The outcome is recorded on the token, where only a PIN holder can change it: a failure writes the
    /// `verify-failed-<wallet id>` object, which locks the wallet at every later open (`VerificationMark`);
    /// a clean verification removes it and lifts that lock. The anchor's own lock is not decided here.
    public func verifyLedger() throws -> LedgerVerifier.Report {
        var physical: [String] = []
        if lock != nil {
            do {
                try store.checkpointWAL()
            } catch {
                physical.append("wal_checkpoint: \(error)")
            }
        }
        // The replay starts from entry 0 with no issuer trusted and follows the signed trust entries.
        let sources = store.statementSources(walletID: walletID, trustedIssuers: [])
        var report: LedgerVerifier.Report
        do {
            report = try LedgerVerifier.verify(store, walletID: walletID, statements: sources)
        } catch {
            report = LedgerVerifier.Report()
            report.problems.append("the entries cannot be read: \(error)")
        }
        report.problems += physical + store.physicalProblems()
        if report.entries == report.state.size {
            report.problems += contactTableProblems(current: report.state.settings.contactDigests)
        }
        if let latest, !Self.indexMatches(store, latest.checkpoint) {
            report.problems.append(
                "the index tables (statements, outgoing) differ from the ones the latest checkpoint (size "
                    + "\(latest.checkpoint.size)) commits to by its index digest D, or cannot be read: rows were "
                    + "deleted, added or edited outside secure")
        }
        let mark = VerificationMark(session: token, walletID: walletID)
        if report.isValid {
            try mark.clear()
            if case .verificationFailed = lockReason { lockReason = nil }
        } else {
            try mark.record(problems: report.problems, size: size)
            if lockReason == nil { lockReason = .verificationFailed(report.problems[0]) }
        }
        return report
    }
}

extension Wallet {
    /// The `contacts` table against the ledger's contact settings entries (tags 7–9): the rows not marked
    /// removed must be exactly the records whose digests the replay left current (`current`), and every
    /// row, removed or not, must be one that an entry added. A record edited, added or deleted outside
    /// secure breaks one or the other (a row's digest column is also checked against its record, with every
    /// other table's rows, in `physicalProblems`).
    func contactTableProblems(current: Set<Digest32>) -> [String] {
        var added = Set<Digest32>()
        var rows: [LedgerStore.ContactRow] = []
        do {
            try store.forEachEntry(kind: .settings, from: 0) { entry in
                switch try? SettingsChange.decode(payload: entry.payload) {
                case .contactAdded(let digest)?, .contactReplaced(_, let digest)?: added.insert(digest)
                default: break
                }
            }
            rows = try store.contactRows(includingRemoved: true)
        } catch {
            return ["table contacts: cannot be checked against the ledger: \(error)"]
        }
        var problems: [String] = []
        let listed = Set(rows.filter { !$0.removed }.map(\.digest))
        for digest in current.subtracting(listed).sorted(by: { $0.hex < $1.hex }) {
            problems.append(
                "table contacts: contact \(digest.hex), current by the ledger's settings entries, has no current "
                    + "row: it was deleted or marked removed outside secure")
        }
        for digest in listed.subtracting(current).sorted(by: { $0.hex < $1.hex }) {
            problems.append(
                "table contacts, row \(digest.hex): a current contact that the ledger's settings entries do not "
                    + "hold: it was added or edited outside secure")
        }
        for row in rows where row.removed && !added.contains(row.digest) {
            problems.append(
                "table contacts, row \(row.digest.hex): a removed contact that no settings entry ever added")
        }
        return problems
    }
}

/// The token object that records a failed `ledger verify`: `verify-failed-<wallet id>` in the wallet's
/// application, holding the ledger size and the first problems as text. Writing or destroying a private
/// token object takes the PIN, so an adversary who holds the database key (from a copy of the folder)
/// but not the PIN cannot lift the lock by editing files; the owner lifts it by making the ledger verify
/// (restoring a good copy) and running `ledger verify` again.
struct VerificationMark {
    static let application = "secure-wallet"
    /// How much problem text the object keeps: enough to say why, far below any token's object limit.
    static let textByteCountMax = 1024
    let session: WalletToken
    let label: String

    init(session: WalletToken, walletID: WalletID) {
        self.session = session
        label = "verify-failed-" + walletID.hex
    }

    /// The recorded failure's text, or nil when no failure is recorded.
    func load() throws -> String? {
        try session.dataObjects(application: Self.application).first { $0.label == label }
            .map { String(decoding: $0.value, as: UTF8.self) }
    }

    func record(problems: [String], size: UInt64) throws {
        let text = "ledger verify failed at \(size) entries: " + problems.prefix(3).joined(separator: "; ")
        try session.replaceDataObject(
            application: Self.application, label: label, value: Array(text.utf8.prefix(Self.textByteCountMax)))
    }

    func clear() throws {
        guard try load() != nil else { return }
        try session.destroyDataObjects(application: Self.application, label: label)
    }
}
