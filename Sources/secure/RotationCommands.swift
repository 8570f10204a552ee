import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// `secure keys rotate` and `secure keys audit`: argument parsing, prompts and output only.
extension KeyCommands {
    static let rotationHelp = """
          secure keys rotate [--backup-token URI] [--backup-pin-source SPEC] [--destroy-old [--yes]] [--json]
                             [--attestation FILE] [--attestation-root PEM]
              Put the pre-committed next key in force and commit to a new next key (two chained key events,
              out through the backup token and home again), each appended to the ledger. The old key is
              retired: kept for verification, never signs again. --destroy-old deletes retired keys from the
              tokens after confirmation (typed, or --yes). After `wallet recover`, run it with the new token.
              Every key put in force or committed to must have a proven origin (as at `wallet init`).
          secure keys audit [--backup-token URI] [--backup-pin-source SPEC] [--json]
              One line per token (PIN state and tries, firmware, default PIN) and one line of findings per key
              on the wallet's token (and the backup, when given): attributes, origin (a PIV key's verified
              attestation with its PIN and touch policy, else the module's word), usage, place in the
              key-event log. Keys the wallet does not use are INFO only. Exit code 10 when a finding is
              critical. --attestation FILE and --attestation-root PEM as for `wallet init`.
        """

    /// The backup token's session: --backup-token, else the one recorded at init; its own PIN source.
    static func openBackup(_ arguments: Arguments, recorded: String?, required: Bool) throws -> TokenSession? {
        guard let text = arguments.value("backup-token") ?? recorded else {
            if required {
                throw UsageError("--backup-token is required: the committed next key is on the backup token")
            }
            return nil
        }
        // --module-args belongs to the wallet token's module, not the backup's (as at `wallet init`).
        let uri = try PKCS11URI(text)
        let token = try TokenLibrary.shared.token(uri)
        return try TokenSession(
            token: token, pin: try readBackupPIN(arguments, uri: uri, token: token),
            confirmFinalTry: arguments.flag("confirm-final-try"), policy: try tokenPolicy(arguments))
    }

    static func rotate(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["backup-token", "backup-pin-source"]).union(attestationOptions),
            flags: appendingFlags.union(jsonFlag).union(["destroy-old", "yes"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let destroyOld = arguments.flag("destroy-old")
        if destroyOld && !arguments.flag("yes") {
            // Only a person at a terminal can confirm; a script passes --yes.
            let answer =
                isatty(STDIN_FILENO) != 1
                ? nil
                : TerminalPerson.ask(
                    "Delete the retired private keys from the tokens after the rotation? "
                        + "Signatures they made stay verifiable. Type \"destroy\" to confirm: ", timeoutSeconds: 120)
            guard answer == "destroy" else {
                throw UsageError("--destroy-old needs confirmation: type \"destroy\" at the prompt, or pass --yes")
            }
        }
        // Both PINs are read before the wallet takes its lock: the backup token's first, as it is opened first.
        let (_, recorded) = try recordedWallet(arguments)
        guard let backup = try openBackup(arguments, recorded: recorded?.backupToken, required: true) else {
            return .usage
        }
        defer { backup.close() }
        let wallet = try openWallet(arguments, .appending)
        defer { (wallet.token as? TokenSession)?.close() }
        // The allowances `wallet init` recorded covered both tokens, as its flags did.
        if let policy = (wallet.token as? TokenSession)?.policy { backup.policy = policy }
        let result = try wallet.rotate(backup: backup, destroyOld: destroyOld)
        let event = wallet.keyEvent.event
        if arguments.flag("json") {
            JSONOutput.print(
                .keyRotation,
                [
                    "walletID": wallet.walletID.hex, "sequence": event.sequence,
                    "ledgerPosition": event.ledgerPosition,
                    "fingerprint": Hex.encode(event.signingKey.fingerprint),
                    "nextKeyDigest": event.nextKeyDigest.hex,
                    "contactKeyFingerprint": JSONOutput.nullable(wallet.keyLog.currentContactKeyDigest?.hex),
                    "events": result.events.map { $0.event.digest.hex },
                    "retired": result.retired.map { Hex.encode($0.fingerprint) }, "destroyed": result.destroyed,
                ])
        } else {
            print(
                "rotated: key \(Hex.encode(event.signingKey.fingerprint)) in force from ledger position \(event.ledgerPosition) "
                    + "(key event \(event.sequence)); next key committed: \(event.nextKeyDigest.hex); contact key: "
                    + WalletCommands.contactKeyText(wallet.keyLog))
            printError(
                "secure: retired \(result.retired.count) key(s)" + (destroyOld ? ", deleted \(result.destroyed)" : ""))
        }
        return .success
    }

    static func audit(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["backup-token", "backup-pin-source"]).union(attestationOptions),
            flags: walletFlags.union(jsonFlag))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        defer { (wallet.token as? TokenSession)?.close() }
        guard let main = wallet.token as? TokenSession else {
            preconditionFailure("the CLI opens wallets on real tokens")
        }
        let backup =
            arguments.value("backup-token") == nil
            ? nil
            : try openBackup(arguments, recorded: wallet.metadata.backupToken, required: true)
        defer { backup?.close() }
        let audited = [main] + (backup.map { [$0] } ?? [])
        let rows = try KeyAudit.audit(
            tokens: audited, log: wallet.keyLog, recipients: try wallet.databaseKeyRecipients(),
            evidence: wallet.keptAttestationCertificates())
        let tokens = KeyAudit.tokenReports(tokens: audited)
        if arguments.flag("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let document = AuditDocument(
                format: KeyAudit.format, walletID: wallet.walletID.hex,
                keySequence: wallet.keyEvent.event.sequence, tokens: tokens, keys: rows)
            print(String(decoding: try encoder.encode(document), as: UTF8.self))
        } else {
            for token in tokens {
                let notes = token.findings.filter { $0.severity != .ok }.map(\.detail)
                print(
                    "\(token.severity.rawValue.uppercased())  token \(token.label)  firmware \(token.firmwareVersion)  "
                        + "PIN \(token.pinState), tries left: \(token.pinTriesLeft)"
                        + (notes.isEmpty ? "" : "  " + notes.joined(separator: "; ")))
            }
            for row in rows {
                let problems = row.findings.filter { $0.severity != .ok }.map(\.detail)
                let policies = [row.pinPolicy.map { "PIN \($0)" }, row.touchPolicy.map { "touch \($0)" }]
                    .compactMap { $0 }
                let role: String = row.role.rawValue + (row.inForce ? " (in force)" : "")
                let policyText: String = policies.isEmpty ? "" : " (" + policies.joined(separator: ", ") + ")"
                let problemText: String = problems.isEmpty ? "all checks pass" : problems.joined(separator: "; ")
                let severity: String = row.severity.rawValue.uppercased()
                print(
                    "\(severity)  \(row.token)/\(row.label)  \(role)  \(row.fingerprint.prefix(16))  "
                        + "origin: \(row.origin)\(policyText)  \(problemText)")
            }
        }
        let worst = (rows.map(\.severity) + tokens.map(\.severity)).max() ?? .ok
        return worst == .critical ? .integrity : .success
    }

    /// The top level of `keys audit --json`.
    struct AuditDocument: Encodable {
        let format: String
        let walletID: String
        let keySequence: UInt64
        let tokens: [KeyAudit.TokenReport]
        let keys: [KeyAudit.Row]
    }
}

/// `secure audit export` and `secure audit verify`.
enum AuditCommands {
    static let help = """
        Usage:
          secure audit export --out FILE [--from N] [--to M]
              Write an audit bundle: public keys, the key-event log, the signed range and latest checkpoints,
              entries N … M−1 (default: all) with inclusion proofs, and the consistency proof between them.
          secure audit verify FILE [--json]
              Check a bundle offline, with no token. Exit code 7 when it does not verify.
        The format is in docs/PROTOCOL.md ("Audit bundles").
        """

    static func export(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions.union(["out", "from", "to"]), flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let out = try arguments.required("out")
        func number(_ name: String) throws -> UInt64? {
            guard let text = arguments.value(name) else { return nil }
            guard let value = UInt64(text) else { throw UsageError("--\(name) must be an entry position") }
            return value
        }
        let wallet = try openWallet(arguments, .reading)
        defer { (wallet.token as? TokenSession)?.close() }
        let bytes = try AuditBundleFile.export(wallet, from: try number("from") ?? 0, to: try number("to"))
        try DurableFile.write(bytes, to: out)
        printError("secure: wrote the audit bundle \(out) (\(bytes.count) bytes)")
        return .success
    }

    static func verify(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: [], flags: ["json"])
        let path = try arguments.positionals(1, "one bundle FILE")[0]
        let (problems, bundle) = try AuditBundleFile.verify(try readFile(path, what: "the audit bundle"))
        if arguments.flag("json") {
            JSONOutput.print(
                .auditVerification,
                [
                    "valid": problems.isEmpty, "problems": problems, "walletID": bundle.walletID.hex,
                    "keyEvents": bundle.keyEvents.count, "size": bundle.latest.checkpoint.size,
                    "from": bundle.from, "to": bundle.rangeCheckpoint.checkpoint.size,
                ])
        } else if problems.isEmpty {
            print(
                "audit bundle OK: wallet \(bundle.walletID.hex), \(bundle.keyEvents.count) key event(s), "
                    + "entries \(bundle.from) … \(bundle.rangeCheckpoint.checkpoint.size - 1) of \(bundle.latest.checkpoint.size)"
            )
        } else {
            for problem in problems { printError("secure: audit bundle INVALID: \(problem)") }
        }
        return problems.isEmpty ? .success : .verification
    }
}
