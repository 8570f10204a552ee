import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore
@testable import SecureWallet

/// Contacts kept by a real wallet on real SoftHSM tokens (issue 17): added through the Wallet API (the
/// exchange, `contact add --near`, is the lead's), then read and changed by the stock `secure` binary:
/// `contact list|show|rename|remove`, `history` with contact names, and `ledger verify` catching a contacts
/// table changed behind the ledger's back.
@Suite("Contacts in the wallet and on the command line", .serialized)
struct ContactStoreTests {
    static var python: String { Run.projectRoot + "/.venv/bin/python" }

    /// A contact record of `peer`'s wallet under `name`, with a random contact key.
    static func record(of peer: TestWallet, name: String, verification: ContactVerification = .verified) throws
        -> ContactRecord
    {
        let log = peer.wallet!.keyLog
        return try ContactRecord(
            walletID: log.walletID, log: log, contactKey: SystemRandom.bytes(ContactRecord.contactKeyByteCount),
            name: name,
            addedAt: 1_767_225_600_000, verification: verification, rangingSource: .external,
            medianMillimetres: 180, trustedIssuers: [])
    }

    static func arguments(_ test: TestWallet) -> [String] {
        ["--wallet", test.paths.directory, "--pin-source", "file:" + test.main.pinPath]
    }

    static func secure(_ arguments: [String]) throws -> ProcessResult { try Run.program(Run.secure, arguments) }

    /// The contact entries among the ledger's settings entries, in order.
    static func contactChanges(_ wallet: Wallet) throws -> [SettingsChange] {
        var changes: [SettingsChange] = []
        try wallet.ledger.forEachEntry(kind: .settings, from: 0) { entry in
            let change = try SettingsChange.decode(payload: entry.payload)
            if change.isContactChange { changes.append(change) }
        }
        return changes
    }

    @Test func theWalletAddsAndRefusesContacts() throws {
        let alice = try TestWallet("ct-api-a"), bob = try TestWallet("ct-api-b"), carol = try TestWallet("ct-api-c")
        var wallet: Wallet { alice.wallet! } // not kept: a closed wallet must release its lock
        let bobRecord = try Self.record(of: bob, name: "Bob")
        let secret = SecretBytes(randomCount: 32)
        try wallet.addContact(bobRecord, secret: secret)
        let entry = try #require(try wallet.ledger.entry(at: wallet.size - 1))
        #expect(entry.kind == .settings && entry.payload == SettingsChange.contactAdded(bobRecord.digest).payload)
        #expect(entry.note.isEmpty && entry.counterparty.isEmpty, "the entry names no one")
        #expect(try wallet.contacts() == [bobRecord])
        #expect(try wallet.contact(named: "Bob") == bobRecord)
        #expect(try wallet.contact(walletID: bob.wallet!.walletID) == bobRecord)
        #expect(try wallet.contactSecret(walletID: bob.wallet!.walletID) == secret)
        #expect(throws: WalletError(.notFound, "")) { try wallet.contactSecret(walletID: carol.wallet!.walletID) }

        let size = wallet.size
        #expect(throws: WalletError(.refused, ""), "a second name for the same wallet") {
            try wallet.addContact(try Self.record(of: bob, name: "Robert"), secret: secret)
        }
        #expect(throws: WalletError(.refused, ""), "a name taken") {
            try wallet.addContact(try Self.record(of: carol, name: "Bob"), secret: secret)
        }
        #expect(throws: WalletError(.refused, ""), "itself") {
            try wallet.addContact(try Self.record(of: alice, name: "Me"), secret: secret)
        }
        #expect(throws: WalletError(.invalidInput, "")) {
            try wallet.addContact(try Self.record(of: carol, name: "Carol"), secret: SecretBytes(randomCount: 16))
        }
        #expect(throws: FormatError.self) { try Self.record(of: carol, name: "192.168.0.7:7464") }
        #expect(throws: FormatError.self) { try Self.record(of: carol, name: "Car\u{202E}ol") }
        #expect(throws: WalletError(.invalidInput, "")) { try wallet.renameContact("Bob", to: "7464") }
        #expect(throws: WalletError(.refused, ""), "replaced by another wallet's record") {
            try wallet.replaceContact(bobRecord, with: try Self.record(of: carol, name: "Bob"))
        }
        #expect(wallet.size == size, "nothing refused was signed")

        // A newer record of the same wallet (the lead's update after a rotation) keeps the secret.
        let newer = try Self.record(of: bob, name: "Bob", verification: .unconfirmed)
        try wallet.replaceContact(bobRecord, with: newer)
        #expect(try wallet.contacts() == [newer])
        #expect(try wallet.contactSecret(walletID: bob.wallet!.walletID) == secret)
        #expect(throws: WalletError(.notFound, ""), "the old record is no longer current") {
            try wallet.replaceContact(bobRecord, with: newer)
        }
        let carolRecord = try Self.record(of: carol, name: "Carol")
        try wallet.addContact(carolRecord, secret: SecretBytes(randomCount: 32))
        try wallet.removeContact(named: "Bob")
        #expect(throws: WalletError(.notFound, "")) { try wallet.removeContact(named: "Bob") }

        // The settings replay from the ledger keeps them, and every change is an entry.
        let reopened = try alice.reopen()
        #expect(try reopened.contacts() == [carolRecord])
        #expect(reopened.settings.contactDigests == [carolRecord.digest])
        #expect(
            try Self.contactChanges(reopened) == [
                .contactAdded(bobRecord.digest), .contactReplaced(old: bobRecord.digest, new: newer.digest),
                .contactAdded(carolRecord.digest), .contactRemoved(newer.digest),
            ])
        let rows = try reopened.ledger.contactRows(includingRemoved: true)
        #expect(
            rows.count == 3
                && rows.filter(\.removed).map(\.record).sorted { $0.digest.hex < $1.digest.hex }
                    == [bobRecord, newer].sorted { $0.digest.hex < $1.digest.hex }
        )
        #expect(try reopened.verifyLedger().isValid)
        // Bob can be a contact again after his removal.
        try reopened.addContact(try Self.record(of: bob, name: "Bob"), secret: secret)
        #expect(try reopened.contacts().map(\.name) == ["Bob", "Carol"])
        try Self.checkAuditBundle(reopened, hidden: [bobRecord, newer, carolRecord], directory: alice.paths.directory)
        for test in [alice, bob, carol] { test.close() }
    }

    /// An audit bundle carries the contact entries as (position, id, digest, leaf hash, previous link) only:
    /// no record digest, wallet id or name appears in it, and it verifies (here and in the independent
    /// scripts/oracles/verify_bundle.py). An opaque entry's digest changed breaks the chain.
    static func checkAuditBundle(_ wallet: Wallet, hidden: [ContactRecord], directory: String) throws {
        let bytes = try AuditBundleFile.export(wallet)
        let text = String(decoding: bytes, as: UTF8.self)
        for record in hidden {
            for secret in [record.digest.hex, record.walletID.hex, Hex.encode(Array(record.name.utf8))] {
                #expect(!text.contains(secret), "the bundle names a contact")
            }
            #expect(!text.contains(record.name))
        }
        let (problems, bundle) = try AuditBundleFile.verify(bytes)
        #expect(problems.isEmpty, "\(problems)")
        let opaque = bundle.entries.compactMap(\.opaque)
        #expect(opaque.count == 5, "every contact entry, and only those, is opaque")
        let file = directory + "/bundle.json"
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let oracle = try Run.program(python, [Run.projectRoot + "/scripts/oracles/verify_bundle.py", file])
        #expect(oracle.status == 0 && oracle.output.hasPrefix("OK"), "\(oracle.output) \(oracle.stderr)")
        // The first opaque entry's digest, changed.
        let digest = opaque[0].digest.hex
        let flipped = (digest.first == "0" ? "1" : "0") + digest.dropFirst()
        let forged = Array(text.replacingOccurrences(of: "\"" + digest + "\"", with: "\"" + flipped + "\"").utf8)
        let (forgedProblems, _) = try AuditBundleFile.verify(forged)
        #expect(forgedProblems.contains { $0.contains("does not link") }, "\(forgedProblems)")
    }

    /// The binary lists, shows, renames and removes a contact, and `history` names it, in text, CSV and JSON.
    @Test func theBinaryListsShowsRenamesAndRemovesContacts() throws {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded("ct-cli-a", "20.00 EUR", issuer: issuer)
        let bob = try TestWallet("ct-cli-b")
        var wallet: Wallet { alice.wallet! } // not kept: a closed wallet must release its lock
        let record = try Self.record(of: bob, name: "Bob \u{1F9D1}")
        try wallet.addContact(record, secret: SecretBytes(randomCount: 32))
        _ = try wallet.spend(to: bob.wallet!.walletID, amount: try wallet.asset("2.50 EUR"), category: "food")
        alice.close()
        let own = Self.arguments(alice)

        let list = try Self.secure(["contact", "list"] + own)
        #expect(list.status == 0, "\(list.stderr)")
        let short =
            String(record.walletID.hex.uppercased().prefix(4)) + "…" + record.walletID.hex.uppercased().suffix(4)
        #expect(
            list.output.contains("Bob \u{1F9D1}") && list.output.contains("verified") && list.output.contains(short),
            "\(list.output)")
        let show = try Self.secure(["contact", "show", "Bob \u{1F9D1}"] + own)
        #expect(show.status == 0, "\(show.stderr)")
        for expected in [
            record.walletID.hex, Hex.encode(SHA256.hash(record.contactKey)),
            Hex.encode(record.log.current.signingKey.fingerprint), "external ranging, median 180 mm",
            "key events    1", "2026-01-01T00:00:00Z",
        ] {
            #expect(show.output.contains(expected), "\(expected) in \(show.output)")
        }
        let listJSON = try Self.secure(["contact", "list", "--json"] + own)
        let showJSON = try Self.secure(["contact", "show", "Bob \u{1F9D1}", "--json"] + own)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(showJSON.stdout)) as? [String: Any])
        #expect(parsed["format"] as? String == "secure-contact-v1" && parsed["name"] as? String == "Bob \u{1F9D1}")
        #expect(parsed["digest"] as? String == record.digest.hex && parsed["keyEventCount"] as? Int == 1)

        let history = try Self.secure(["history"] + own)
        #expect(history.output.contains("to contact \"Bob \u{1F9D1}\" " + short), "\(history.output)")
        let historyJSON = try Self.secure(["history", "--json"] + own)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(historyJSON.stdout)) as? [String: Any])
        let rows = try #require(document["entries"] as? [[String: Any]])
        #expect(rows.filter { $0["contact"] as? String == "Bob \u{1F9D1}" }.count == 1, "\(rows)")
        #expect(rows.filter { $0["contact"] is NSNull }.count == rows.count - 1)
        let csv = try Self.secure(["history", "--csv"] + own)
        #expect(csv.output.split(separator: "\r\n").last?.hasSuffix(",Bob \u{1F9D1}") == true, "\(csv.output)")

        // Schemas: the independent oracle validates both outputs (and reports the formats it did not see).
        let directory = alice.paths.directory
        var cases: [[String: Any]] = []
        for (index, (command, format, output)) in [
            ("contact list", "secure-contact-list-v1", listJSON.stdout),
            ("contact show", "secure-contact-v1", showJSON.stdout),
            ("history", "secure-history-v3", historyJSON.stdout),
        ].enumerated() {
            let file = directory + "/json-\(index)"
            try Data(output).write(to: URL(fileURLWithPath: file))
            cases.append([
                "command": command, "format": format, "file": file, "lines": false, "text": NSNull(), "amounts": [],
            ])
        }
        try JSONSerialization.data(withJSONObject: cases).write(to: URL(fileURLWithPath: directory + "/cases.json"))
        let schemas = try Run.program(
            Self.python,
            [
                Run.projectRoot + "/scripts/oracles/json_schemas.py", Run.projectRoot + "/docs/schemas",
                directory + "/cases.json",
            ])
        let report = schemas.output + schemas.stderr
        for command in ["contact list", "contact show", "history"] {
            #expect(report.contains("ok \(command)") && !report.contains("FAIL \(command)"), "\(report)")
        }

        // Rename: refused names are usage errors, nothing signed.
        let refused = try Self.secure(["contact", "rename", "Bob \u{1F9D1}", "10.0.0.2:7464"] + own)
        #expect(refused.status == 2 && refused.stderr.contains("address"), "\(refused.stderr)")
        let unknown = try Self.secure(["contact", "rename", "Nobody", "Somebody"] + own)
        #expect(unknown.status != 0 && unknown.stderr.contains("no contact is named \"Nobody\""), "\(unknown.stderr)")
        // The fixture's entries are dated 2026-01-01: the first entry dated by this clock is accepted so.
        let rename = try Self.secure(["contact", "rename", "Bob \u{1F9D1}", "Robert", "--accept-clock"] + own)
        #expect(rename.status == 0 && rename.output.contains("is now \"Robert\""), "\(rename.output) \(rename.stderr)")
        #expect(try Self.secure(["history"] + own).output.contains("to contact \"Robert\""))

        // Remove: no terminal and no --yes is refused; --yes removes; the entries stay.
        let unconfirmed = try Self.secure(["contact", "remove", "Robert"] + own)
        #expect(unconfirmed.status == 2 && unconfirmed.stderr.contains("--yes"), "\(unconfirmed.stderr)")
        let remove = try Self.secure(["contact", "remove", "Robert", "--yes"] + own)
        #expect(remove.status == 0, "\(remove.stderr)")
        #expect(try Self.secure(["contact", "list"] + own).output == "no contacts\n")
        #expect(try Self.secure(["contact", "show", "Robert"] + own).status != 0)
        let verify = try Self.secure(["ledger", "verify"] + own)
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
        let reopened = try alice.reopen()
        #expect(try Self.contactChanges(reopened).count == 3, "added, replaced (renamed), removed")
        alice.close()
        bob.close()
    }

    /// Someone with the database key edits, adds or deletes a contact row: `ledger verify` (the API and the
    /// binary) says the contacts table disagrees with the ledger, and reading contacts is refused.
    @Test func verifyCatchesAContactsTableChangedBehindTheLedger() throws {
        let alice = try TestWallet("ct-tamper-a"), bob = try TestWallet("ct-tamper-b"),
            carol = try TestWallet("ct-tamper-c")
        let record = try Self.record(of: bob, name: "Bob")
        try alice.wallet!.addContact(record, secret: SecretBytes(randomCount: 32))
        let key = try alice.databaseKey()
        let walletID = alice.wallet!.walletID
        alice.close()
        let salt = try LedgerStore.fileSalt(alice.paths.database)
        func tamper(_ body: (LedgerStore) throws -> Void) throws {
            let store = try LedgerStore.open(
                path: alice.paths.database, key: key, expectedSalt: salt, walletID: walletID)
            try body(store)
        }
        let renamed = try record.renamed("Mallory")
        let forged = try Self.record(of: carol, name: "Carol")
        let edits: [(String, String, (LedgerStore) throws -> Void)] = [
            (
                "a record edited with its digest", "do not hold",
                { store in
                    try store.database.execute(
                        "UPDATE contacts SET digest = x'\(renamed.digest.hex)', record = x'\(Hex.encode(renamed.encoded))'"
                    )
                }
            ),
            (
                "a record edited, its digest left", "another digest",
                { try $0.database.execute("UPDATE contacts SET record = x'\(Hex.encode(renamed.encoded))'") }
            ),
            ("a row deleted", "has no current row", { try $0.database.execute("DELETE FROM contacts") }),
            (
                "a row added", "do not hold",
                { store in
                    try store.database.execute(
                        "INSERT INTO contacts (digest, wallet, record, secret, removed) VALUES (x'\(forged.digest.hex)', "
                            + "x'\(forged.walletID.hex)', x'\(Hex.encode(forged.encoded))', zeroblob(32), 0)")
                }
            ),
            (
                "a row marked removed", "has no current row",
                { try $0.database.execute("UPDATE contacts SET removed = 1") }
            ),
        ]
        var original: [UInt8] = []
        try tamper { store in
            let statement = try store.database.prepare("SELECT secret FROM contacts")
            _ = try statement.step()
            original = statement.blob(0)
        }
        for (what, message, edit) in edits {
            try tamper(edit)
            let verify = try Self.secure(["ledger", "verify"] + Self.arguments(alice))
            #expect(verify.status != 0, "\(what): \(verify.output)")
            #expect(
                (verify.output + verify.stderr).contains("table contacts"), "\(what): \(verify.output) \(verify.stderr)"
            )
            #expect((verify.output + verify.stderr).contains(message), "\(what): \(verify.output) \(verify.stderr)")
            let reopened = try alice.reopen()
            #expect(throws: StoreError.self, "\(what): contacts are refused") { try reopened.contacts() }
            alice.close()
            // Put the table back as the ledger says, and verify again (which lifts the lock).
            try tamper { store in
                try store.database.execute("DELETE FROM contacts")
                try store.database.execute(
                    "INSERT INTO contacts (digest, wallet, record, secret, removed) VALUES (x'\(record.digest.hex)', "
                        + "x'\(record.walletID.hex)', x'\(Hex.encode(record.encoded))', x'\(Hex.encode(original))', 0)")
            }
            let clean = try Self.secure(["ledger", "verify"] + Self.arguments(alice))
            #expect(clean.status == 0, "\(what), restored: \(clean.output) \(clean.stderr)")
        }
        #expect(try alice.reopen().contacts() == [record])
        for test in [alice, bob, carol] { test.close() }
    }
}
