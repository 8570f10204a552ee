import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureToken

/// The PIN for a command: --pin-source, else the URI's pin-value or pin-source, else a prompt when
/// there is a terminal. No default PIN is ever tried.
func readPIN(_ arguments: Arguments, uri: PKCS11URI, token: Token) throws -> PIN {
    try readPIN(spec: arguments.value("pin-source"), option: "--pin-source", uri: uri, token: token, what: "token")
}

/// The PIN for a wallet's backup token, read the same way as the main token's: --backup-pin-source, else the
/// backup URI's, else a prompt on the terminal that names the backup token. SECURE_PIN_SOURCE and the config
/// file fill --pin-source only: they name the main token's PIN, never the backup's. The backup is checked
/// for a final PIN try first, as the main token is.
func readBackupPIN(_ arguments: Arguments, uri: PKCS11URI, token: Token) throws -> PIN {
    try token.permitsLogin(confirmedFinalTry: arguments.flag("confirm-final-try"))
    return try readPIN(
        spec: arguments.value("backup-pin-source"), option: "--backup-pin-source", uri: uri, token: token,
        what: "backup token")
}

/// The PIN of the token holding a clearing key (`issuer delegate-clearing`), by --clearing-pin-source.
func readClearingPIN(_ arguments: Arguments, uri: PKCS11URI, token: Token) throws -> PIN {
    try token.permitsLogin(confirmedFinalTry: arguments.flag("confirm-final-try"))
    return try readPIN(
        spec: arguments.value("clearing-pin-source"), option: "--clearing-pin-source", uri: uri, token: token,
        what: "clearing key's token")
}

private func readPIN(spec: String?, option: String, uri: PKCS11URI, token: Token, what: String) throws -> PIN {
    let source: PINSource
    if let spec {
        source = try PINSource(spec: spec)
    } else if let fromURI = try PINSource(uri: uri) {
        source = fromURI
    } else if isatty(STDIN_FILENO) == 1 {
        source = .prompt
    } else {
        throw TokenError(
            .pinUnavailable,
            "no PIN source for the \(what) \"\(token.label)\" and no terminal to ask on; "
                + "pass \(option) file:PATH, env:VAR or fd:N")
    }
    return try source.read(prompt: "PIN for \(what) \"\(token.label)\": ")
}

/// The token policy the flags ask for, with the allowances a wallet's signed settings recorded: each
/// --allow-… flag names the safeguard it gives up, for this command; a wallet's settings give it up for
/// every command on that wallet (`wallet init` records them, `wallet allow` changes them). A PIV key's
/// attestation comes from the token, or from --attestation FILE; --attestation-root PEM adds roots and
/// intermediates to the ones built in.
func tokenPolicy(_ arguments: Arguments, allowances: Set<TokenAllowance> = []) throws -> TokenPolicy {
    TokenPolicy(
        allowUnenforcedPIN: arguments.flag("allow-unenforced-pin") || allowances.contains(.unenforcedPIN),
        allowUnprovenOrigin: arguments.flag("allow-unproven-origin") || allowances.contains(.unprovenOrigin),
        attestation: try AttestationSources.load(
            attestationFile: arguments.value("attestation"), rootFile: arguments.value("attestation-root")))
}

/// The allowances the --allow-… flags name, for `wallet init` to record.
func tokenAllowances(_ arguments: Arguments) -> Set<TokenAllowance> {
    Set(TokenAllowance.allCases.filter { arguments.flag("allow-\($0)") })
}

/// The options that name where a PIV key's attestation and its roots come from (`wallet init`, `keys
/// rotate`, `keys audit`).
let attestationOptions: Set<String> = ["attestation", "attestation-root"]

/// Opens an authenticated session for a command, honouring --confirm-final-try and the --allow-… flags.
func openSession(_ arguments: Arguments, uri: PKCS11URI) throws -> TokenSession {
    try openSession(arguments, token: try TokenLibrary.shared.token(uri), uri: uri)
}

/// Opens an authenticated session on a token already found; `uri` may carry the PIN source.
func openSession(_ arguments: Arguments, token: Token, uri: PKCS11URI) throws -> TokenSession {
    try token.permitsLogin(confirmedFinalTry: arguments.flag("confirm-final-try"))
    let pin = try readPIN(arguments, uri: uri, token: token)
    return try TokenSession(
        token: token, pin: pin, confirmFinalTry: arguments.flag("confirm-final-try"),
        policy: try tokenPolicy(arguments))
}

/// Parses a URI argument, applying --module-args to the module it names.
func parseURI(_ text: String, _ arguments: Arguments) throws -> PKCS11URI {
    let uri = try PKCS11URI(text)
    if let moduleArguments = arguments.value("module-args") {
        guard let module = uri.moduleName ?? uri.modulePath else {
            throw UsageError("--module-args needs a URI that names its module (module-name= or module-path=)")
        }
        TokenLibrary.shared.setInitArguments(moduleArguments, forModule: module)
    }
    return uri
}

let sessionOptions: Set<String> = ["pin-source", "module-args"]
let sessionFlags: Set<String> = ["confirm-final-try", "allow-unenforced-pin", "allow-unproven-origin"]

enum TokenCommands {
    static let help = """
        Usage:
          secure token list [--token URI] [--json] [--module-args ARGS]
              Every p11-kit module (or the one URI names), its tokens, their flags and PIN state.
          secure token init-demo --dir DIR [--label LABEL] [--json]
              Make a SoftHSM token in DIR (never the system's token folder) with a random user PIN,
              written to DIR/LABEL.pin (mode 0600). Prints the token URI. Then: export SOFTHSM2_CONF=DIR/softhsm2.conf
        """

    static func list(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: ["token", "module-args"], flags: ["json"])
        _ = try arguments.positionals(0, "no positional arguments")
        let uri = try parseURI(arguments.value("token") ?? "pkcs11:", arguments)
        let listings = try TokenLibrary.shared.list(uri)
        if arguments.flag("json") {
            JSONOutput.print(
                .tokenList,
                [
                    "modules": listings.map { listing -> [String: Any] in
                        [
                            "module": listing.moduleName, "path": listing.modulePath,
                            "description": listing.moduleDescription, "tokens": listing.tokens.map(describe),
                            "error": JSONOutput.nullable(listing.error?.description),
                        ]
                    }
                ])
            return .success
        }
        for listing in listings {
            print(
                "module \(listing.moduleName) (\(listing.modulePath))"
                    + (listing.moduleDescription.isEmpty ? "" : ": \(listing.moduleDescription)"))
            if let error = listing.error { print("  unavailable: \(error)") }
            for token in listing.tokens {
                let row = describe(token)
                print("  token \"\(token.label)\" serial \(token.serial), \(token.manufacturer) \(token.model)")
                print("    uri        \(token.uri)")
                print(
                    "    PIN state  \(row["pinState"] ?? "?")\((row["protectedAuthenticationPath"] as? Bool) == true ? ", PIN pad" : "")"
                )
            }
            if listing.error == nil && listing.tokens.isEmpty { print("  no tokens") }
        }
        return .success
    }

    private static func describe(_ token: Token) -> [String: Any] {
        [
            "label": token.label, "manufacturer": token.manufacturer, "model": token.model, "serial": token.serial,
            "uri": token.uri.description, "pinState": ((try? token.pinState)?.rawValue ?? "unknown"),
            "protectedAuthenticationPath": (try? token.hasProtectedAuthenticationPath) ?? false,
        ]
    }

    static func initDemo(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: ["dir", "label"], flags: ["json"])
        _ = try arguments.positionals(0, "no positional arguments")
        let layout = DemoToken.Layout(directory: try arguments.required("dir"))
        let created = try DemoToken.create(layout, label: arguments.value("label") ?? "secure-demo")
        if arguments.flag("json") {
            JSONOutput.print(
                .demoToken,
                ["uri": created.uri.description, "pinSource": "file:" + created.pinPath, "config": created.configPath])
        } else {
            print(created.uri)
            printError(
                """
                secure: made SoftHSM token "\(created.uri.token ?? "")" in \(layout.directory)
                secure: its user PIN is in \(created.pinPath) (use --pin-source file:\(created.pinPath))
                secure: before other commands: export SOFTHSM2_CONF=\(created.configPath)
                """)
        }
        return .success
    }
}

enum KeyCommands {
    static let help = """
        Usage:
          secure keys generate --token URI --label LABEL [--usage sign|derive] [--pin-source SPEC] [--json]
              Make a P-256 key pair on the token: private, sensitive, never extractable, always-authenticate
              (signing keys), allowed only its one usage, with a random CKA_ID. Prints the key's URI.
          secure keys list [--token URI] [--wallet DIR] [--json]
              The P-256 keys on the tokens (public halves; no PIN needed). The wallet's signing key in
              force, as its wallet.json names it, is marked "[in force]" ("inForce" in JSON).
          secure keys export URI [--pem]
              The key's SubjectPublicKeyInfo on stdout: DER, or PEM with --pem.
        \(rotationHelp)
        Common options: --module-args ARGS (init args for the URI's module), --confirm-final-try,
          --allow-unenforced-pin (a token that does not enforce the PIN per signature: NSS softokn),
          --allow-unproven-origin (a key whose origin is unproven: a PIV key without a verified
          attestation, or a key not marked CKA_LOCAL: NSS softokn's)
        """

    static func generate(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: sessionOptions.union(["token", "label", "usage"]),
            flags: sessionFlags.union(["json"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let uri = try parseURI(try arguments.required("token"), arguments)
        let label = try arguments.required("label")
        guard !label.isEmpty, label.utf8.count <= 64 else { throw UsageError("--label must be 1 to 64 bytes") }
        guard let usage = KeyUsage(rawValue: arguments.value("usage") ?? "sign") else {
            throw UsageError("--usage must be sign or derive")
        }
        let session = try openSession(arguments, uri: uri)
        defer { session.close() }
        let key = try session.generateKey(label: label, usage: usage)
        if arguments.flag("json") {
            JSONOutput.print(
                .generatedKey,
                [
                    "uri": key.uri.description, "fingerprint": Hex.encode(key.publicKey.fingerprint),
                    "publicKeyPEM": key.publicKey.pem, "usage": usage.rawValue,
                ])
        } else {
            print(key.uri)
            printError(
                "secure: made P-256 \(usage.rawValue) key \"\(label)\", fingerprint \(Hex.encode(key.publicKey.fingerprint))"
            )
        }
        return .success
    }

    static func list(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: ["token", "module-args", "wallet"], flags: ["json"])
        _ = try arguments.positionals(0, "no positional arguments")
        let uri = try parseURI(arguments.value("token") ?? "pkcs11:", arguments)
        // The key in force as wallet.json names it (token and CKA_ID), read without a PIN: a marker for people;
        // `keys audit` checks it against the ledger's key-event log.
        let recorded = (try? recordedWallet(arguments))?.1
        let recordedToken = recorded.flatMap { try? PKCS11URI($0.token) }
        var rows: [[String: Any]] = []
        for listing in try TokenLibrary.shared.list(uri) {
            for token in listing.tokens {
                for key in try token.publicKeys() {
                    let inForce =
                        recorded?.signingKeyID == Hex.encode(key.id)
                        && (recordedToken?.token ?? token.label) == token.label
                        && (recordedToken?.serial ?? token.serial) == token.serial
                    rows.append([
                        "token": token.label, "label": key.label, "id": Hex.encode(key.id),
                        "uri": key.uri.description, "fingerprint": Hex.encode(key.publicKey.fingerprint),
                        "inForce": inForce,
                    ])
                }
            }
        }
        printRows(
            rows, json: arguments.flag("json") ? (JSONOutput.document(.keyList, [:]), "keys") : nil,
            whenEmpty: { printError("secure: no P-256 keys found") },
            line: { row in
                "\(row["token"]!)  \(row["label"]!)  \(row["fingerprint"]!)"
                    + (row["inForce"] as? Bool == true ? "  [in force]" : "") + "\n  \(row["uri"]!)"
            })
        return .success
    }

    static func export(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: ["module-args"], flags: ["pem"])
        let uri = try parseURI(try arguments.positionals(1, "one key URI")[0], arguments)
        let key = try TokenLibrary.shared.token(uri).publicKey(uri)
        if arguments.flag("pem") {
            print(key.publicKey.pem, terminator: "")
        } else {
            writeOut(key.publicKey.spki)
        }
        return .success
    }
}

enum SignCommands {
    static let signHelp = """
        Usage: secure sign --key URI FILE [--pin-source SPEC] [--confirm-final-try] [--module-args ARGS]
          Writes a DER ECDSA P-256 signature of FILE on stdout, over SHA-256("secure-file-v1" ‖ 0x00 ‖ FILE).
          Check it with standard tools:
            (printf 'secure-file-v1\\0'; cat FILE) | openssl dgst -sha256 -verify pub.pem -signature sig.der
        """
    static let verifyHelp = """
        Usage: secure verify --pubkey PEM --sig SIG FILE
          Checks a DER signature made by `secure sign`, with OpenSSL only. High-s signatures are refused.
          Exit code 0 when it verifies, 7 when it does not.
        """

    static func sign(_ words: [String]) throws -> ExitCode {
        if words.contains("--help") {
            print(signHelp)
            return .success
        }
        let arguments = try Arguments(words, options: sessionOptions.union(["key"]), flags: sessionFlags)
        let path = try arguments.positionals(1, "one FILE to sign")[0]
        let uri = try parseURI(try arguments.required("key"), arguments)
        let payload = try readFile(path, what: "the file")
        let session = try openSession(arguments, uri: uri)
        defer { session.close() }
        let signer = try TokenSigner(session: session, keyURI: uri)
        writeOut(try signer.sign(payload, label: .file).der)
        return .success
    }

    static func verify(_ words: [String]) throws -> ExitCode {
        if words.contains("--help") {
            print(verifyHelp)
            return .success
        }
        let arguments = try Arguments(words, options: ["pubkey", "sig"], flags: [])
        let path = try arguments.positionals(1, "one FILE to check")[0]
        let pem = String(
            decoding: try readFile(try arguments.required("pubkey"), what: "the public key"), as: UTF8.self)
        let key = try P256.PublicKey(pem: pem)
        let signatureBytes = try readFile(try arguments.required("sig"), what: "the signature")
        let payload = try readFile(path, what: "the file")
        guard let signature = try? ECDSASignature(der: signatureBytes) else {
            printError("secure: signature INVALID: \(arguments.value("sig")!) is not a DER ECDSA P-256 signature")
            return .verification
        }
        guard SignatureLabel.file.verify(signature, of: payload, by: key) else {
            let reason = signature.isHighS ? " (it has a high s, which is refused)" : ""
            printError("secure: signature INVALID for \(path)\(reason)")
            return .verification
        }
        print("signature OK: \(path) signed by \(Hex.encode(key.fingerprint))")
        return .success
    }
}
