import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureWallet

/// `secure contact list|show|rename|remove`: the contacts this wallet keeps (docs/PROTOCOL.md, "Contact
/// records"). Each change is a signed settings entry that holds only the record's SHA-256; the record is in
/// the wallet's encrypted database. `contact add` (the exchange) is ContactCommands.swift's.
enum ContactListCommands {
    static let help = """
        Usage:
          secure contact list [--json]
              The contacts, by name: verified or unconfirmed, the wallet id and key fingerprint.
          secure contact show NAME [--json]
              One contact: its wallet id, the key in force by its key-event log (fingerprint and sequence),
              the fingerprint of its ML-KEM-1024 contact key, when and how it was verified (ranging source
              and median distance), the issuers it trusts.
          secure contact rename NAME NEW
              Gives the contact another name (a signed settings entry, PIN). A name is 1 to 64 bytes, has no
              control, format or bidi characters, and never reads as an address (HOST:PORT, PORT) or a wallet
              id or fingerprint.
          secure contact remove NAME [--yes]
              Removes the contact (a signed settings entry, PIN); the entry that added it stays in the ledger.
              Asks [y/N] at a terminal; a script passes --yes.
        """

    /// The contact key's fingerprint: SHA-256 of the encapsulation key, as hex.
    static func contactKeyFingerprint(_ record: ContactRecord) -> [UInt8] { SHA256.hash(record.contactKey) }

    /// A fingerprint as people compare it: the first and last four hex digits.
    static func short(_ bytes: [UInt8]) -> String { LedgerCommands.shortWalletID(bytes) }

    static func isoTime(_ milliseconds: Int64) -> String {
        let format = ISO8601DateFormatter()
        format.timeZone = TimeZone(identifier: "UTC")
        return format.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    static func rangingName(_ source: RangingSource) -> String {
        switch source {
        case .simulated: "simulated"
        case .external: "external"
        }
    }

    /// One contact as `--json` writes it (`secure-contact-v1`, and each row of `secure-contact-list-v1`).
    static func jsonObject(_ record: ContactRecord) -> [String: Any] {
        [
            "name": record.name, "walletID": record.walletID.hex,
            "keyFingerprint": Hex.encode(record.log.current.signingKey.fingerprint),
            "keySequence": record.log.current.sequence, "keyEventCount": record.log.events.count,
            "contactKeyFingerprint": Hex.encode(contactKeyFingerprint(record)),
            "verification": record.verification.description, "addedAt": record.addedAt,
            "addedAtTimestamp": isoTime(record.addedAt), "rangingSource": rangingName(record.rangingSource),
            "medianMillimetres": record.medianMillimetres, "trustedIssuers": record.trustedIssuers.map(\.hex),
            "digest": record.digest.hex,
        ]
    }

    /// A locked wallet (a failed `ledger verify`, a rollback) may show contacts the ledger no longer holds:
    /// say so on stderr before listing anything, as `balance` does on its LOCKED line.
    static func warnIfLocked(_ wallet: Wallet) {
        if let lock = wallet.lockReason {
            printError(
                "secure: WARNING: the wallet is locked (\(lock)); these contacts may not be what its ledger holds")
        }
    }

    static func list(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        warnIfLocked(wallet)
        let contacts = try wallet.contacts()
        if arguments.flag("json") {
            JSONOutput.print(.contactList, ["contacts": contacts.map(jsonObject)])
            return .success
        }
        if contacts.isEmpty {
            print("no contacts")
            return .success
        }
        for record in contacts {
            print(
                PeerText.escaped(record.name, limit: ContactName.byteCountMax * 10).padding(
                    toLength: 24, withPad: " ", startingAt: 0)
                    + " " + record.verification.description.padding(toLength: 12, withPad: " ", startingAt: 0)
                    + " wallet \(short(record.walletID.bytes))"
                    + "  key \(short(record.log.current.signingKey.fingerprint))")
        }
        return .success
    }

    static func show(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag))
        let name = try arguments.positionals(1, "the contact's NAME")[0]
        let wallet = try openWallet(arguments, .reading)
        warnIfLocked(wallet)
        guard let record = try wallet.contact(named: name) else { throw noContact(name) }
        if arguments.flag("json") {
            JSONOutput.print(.contact, jsonObject(record))
            return .success
        }
        let key = record.log.current
        let issuers = record.trustedIssuers.map(\.hex)
        let lines: [(String, String)] = [
            ("name", PeerText.quoted(record.name)),
            ("wallet id", record.walletID.hex),
            ("key", "\(Hex.encode(key.signingKey.fingerprint)) (sequence \(key.sequence))"),
            ("key events", "\(record.log.events.count)"),
            ("contact key", "\(Hex.encode(contactKeyFingerprint(record))) (ML-KEM-1024, SHA-256)"),
            (
                record.verification.description,
                "\(isoTime(record.addedAt)), \(rangingName(record.rangingSource)) ranging, median "
                    + "\(record.medianMillimetres) mm"
                    + (record.verification == .unconfirmed ? " (the words were not confirmed on both sides)" : "")
            ),
            (
                "trusts",
                issuers.isEmpty
                    ? "no issuers named" : issuers.joined(separator: "\n" + String(repeating: " ", count: 14))
            ),
        ]
        for (label, value) in lines { print(label.padding(toLength: 14, withPad: " ", startingAt: 0) + value) }
        return .success
    }

    static func rename(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let names = try arguments.positionals(2, "the contact's NAME and its NEW name")
        if let problem = ContactName.problem(names[1]) { throw UsageError(problem) }
        let wallet = try openWallet(arguments, .appending)
        guard try wallet.contact(named: names[0]) != nil else { throw noContact(names[0]) }
        try wallet.renameContact(names[0], to: names[1])
        print(
            "contact \(PeerText.quoted(names[0])) is now \(PeerText.quoted(names[1])) "
                + "(signed as entry \(wallet.size - 1))")
        return .success
    }

    static func remove(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags.union(["yes"]))
        let name = try arguments.positionals(1, "the contact's NAME")[0]
        if !arguments.flag("yes") {
            // Only a person at a terminal can confirm; a script passes --yes.
            let answer =
                isatty(STDIN_FILENO) != 1
                ? nil
                : TerminalPerson.ask("Remove the contact \(PeerText.quoted(name))? [y/N] ", timeoutSeconds: 120)
            guard let answer, ["y", "yes"].contains(answer.lowercased()) else {
                throw UsageError("removing a contact needs confirmation: answer y at the prompt, or pass --yes")
            }
        }
        let wallet = try openWallet(arguments, .appending)
        guard try wallet.contact(named: name) != nil else { throw noContact(name) }
        try wallet.removeContact(named: name)
        print(
            "contact \(PeerText.quoted(name)) removed (signed as entry \(wallet.size - 1); the entry that added it "
                + "stays)")
        return .success
    }

    static func noContact(_ name: String) -> WalletError {
        WalletError(.notFound, "no contact is named \(PeerText.quoted(name)); `secure contact list` shows them")
    }
}
