import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureWallet
import SecureStore
import SecureToken

// The `secure` command: argument parsing, prompts and output formatting; nothing else.

/// Exit codes, documented in README.md and `secure --help`.
enum ExitCode: Int32 {
    case success = 0, failure = 1, usage = 2, pin = 3, pinLocked = 4, token = 5, key = 6, verification = 7
    case wallet = 8, busy = 9, integrity = 10, refused = 11, pending = 12

    static func of(_ error: TokenError) -> ExitCode {
        switch error.code {
        case .pinIncorrect, .pinUnavailable: return .pin
        case .pinLocked, .pinFinalTry: return .pinLocked
        case .moduleNotFound, .tokenNotFound, .tokenRemoved, .unsupported: return .token
        case .keyNotFound, .keyRefused, .ambiguous: return .key
        case .invalidURI: return .usage
        case .pkcs11, .signatureCheckFailed: return .failure
        }
    }

    static func of(_ error: StoreError) -> ExitCode {
        switch error.code {
        case .walletBusy: return .busy
        case .walletMissing, .wrappedKeyMissing, .walletExists: return .wallet
        case .wrongKey, .corrupted, .foreignDatabase, .malformed, .schemaTooNew: return .integrity
        case .io, .sqlite, .anchorUnavailable: return .failure
        }
    }

    static func of(_ error: WalletError) -> ExitCode {
        switch error.code {
        case .locked, .verificationFailed, .keyMismatch: return .integrity
        case .invalidInput: return .usage
        case .refused, .notFound: return .refused
        }
    }
}

let topHelp = """
    secure: a payment wallet whose signing keys live only inside a PKCS#11 token.

    Usage: secure COMMAND [OPTIONS]

    Tokens and keys:
      token list [--json]                         modules, tokens, flags and PIN state
      token init-demo --dir DIR [--label L]       make a SoftHSM token under DIR (demos and tests)
      keys generate --token URI --label L         make a P-256 signing key on the token
      keys list [--token URI] [--json]            the P-256 keys on the tokens
      keys export URI [--pem]                     the key's SubjectPublicKeyInfo on stdout
      keys rotate [--destroy-old]                 put the committed next key in force (pre-rotation)
      keys audit [--json]                         findings per wallet key: attributes, usage, key-event log
      audit export --out FILE [--from N --to M]   an audit bundle for offline checking
      audit verify FILE                           check an audit bundle with no token
      sign --key URI FILE                         a DER signature of FILE on stdout (label secure-file-v1)
      verify --pubkey PEM --sig SIG FILE          check a signature with OpenSSL only; no token needed

    PINs: every command that logs in takes --pin-source SPEC, where SPEC is prompt (the default on a
    terminal), file:PATH, env:VAR or fd:N. A key URI's pin-source and pin-value are honoured too;
    pin-value is visible to other local users in the process list. A wrong PIN is never retried.

    Keys and tokens are named by RFC 7512 URIs, e.g. pkcs11:token=wallet;object=payments?module-name=softhsm2
    For SoftHSM tokens made by init-demo, export SOFTHSM2_CONF=DIR/softhsm2.conf first.

    Exit codes: 0 success, 1 failure, 2 usage error, 3 wrong or missing PIN, 4 PIN locked or on its final
    try, 5 module or token missing or removed, 6 key missing or refused, 7 signature does not verify.

    Run `secure COMMAND --help` for a command's options.
    """

/// Runs one command line and returns its exit code.
func run(_ words: [String]) -> ExitCode {
    guard let command = words.first, command != "--help", command != "-h", command != "help" else {
        print(topHelp)
        return words.isEmpty ? .usage : .success
    }
    do {
        switch command {
        case "token": return try TokenCommands.run(Array(words.dropFirst()))
        case "keys": return try KeyCommands.run(Array(words.dropFirst()))
        case "sign": return try SignCommands.sign(Array(words.dropFirst()))
        case "verify": return try SignCommands.verify(Array(words.dropFirst()))
        case "wallet": return try WalletCommands.run(Array(words.dropFirst()))
        case "budget": return try BudgetCommands.run(Array(words.dropFirst()))
        case "balance", "history", "ledger": return try LedgerCommands.run(words)
        case "issuer", "mint", "deposit", "spend", "accept", "reverse", "confirm", "pending": return try MoneyCommands.run(words)
        case "evidence": return try EvidenceCommands.run(Array(words.dropFirst()))
        case "audit": return try AuditCommands.run(Array(words.dropFirst()))
        case "receive", "pay", "retry": return try PeerCommands.run(words)
        default: throw UsageError("unknown command \"\(command)\"; `secure --help` lists the commands")
        }
    } catch let error as UsageError {
        printError("secure: \(error)")
        return .usage
    } catch let error as TokenError {
        printError("secure: error: \(error)")
        return ExitCode.of(error)
    } catch let error as StoreError {
        printError("secure: error: \(error)")
        return ExitCode.of(error)
    } catch let error as WalletError {
        printError("secure: error: \(error)")
        return ExitCode.of(error)
    } catch let error as MoneyError {
        printError("secure: error: \(error)")
        return .usage
    } catch let error as BudgetError {
        printError("secure: error: \(error)")
        return .usage
    } catch let error as CryptoError {
        printError("secure: error: \(error)")
        return .failure
    } catch {
        printError("secure: error: \(error)")
        return .failure
    }
}


let code = run(Array(CommandLine.arguments.dropFirst()))
TokenLibrary.shared.shutdown()
exit(code.rawValue)
