import SecureCore
import SecureCrypto
import SecureStore
import SecureToken
import SecureWallet

/// Exit codes, documented in README.md ("Exit codes") and listed by `secure --help` from `meaning`.
enum ExitCode: Int32, CaseIterable {
    case success = 0, failure = 1, usage = 2, pin = 3, pinLocked = 4, token = 5, key = 6, verification = 7
    case wallet = 8, busy = 9, integrity = 10, refused = 11, pending = 12

    /// What the code means, as `secure --help` lists it.
    var meaning: String {
        switch self {
        case .success: return "success"
        case .failure: return "failure not named below"
        case .usage: return "usage error: arguments, an amount, a malformed URI, a missing file"
        case .pin: return "wrong or missing PIN"
        case .pinLocked: return "PIN locked, or on its final try (see --confirm-final-try)"
        case .token: return "PKCS#11 module or token missing or removed"
        case .key: return "key missing, ambiguous or refused, or a token that cannot do what was asked"
        case .verification: return "a signature, proof, bundle or evidence that does not verify"
        case .wallet: return "no wallet where one was expected, or one where none may be"
        case .busy: return "wallet busy: another secure process is changing it"
        case .integrity:
            return "integrity: wrong key, corrupted or foreign database, rollback lock, failed verification"
        case .refused: return "refused: budget, balance, policy, or a statement the wallet will not record"
        case .pending: return "a payment was sent but not confirmed yet (`secure pending`, `secure retry`)"
        }
    }

    /// The one table from failure kinds to exit codes: every error type says its kind (`CodedError`).
    init(_ kind: FailureKind) {
        switch kind {
        case .failure: self = .failure
        case .usage: self = .usage
        case .wrongPIN: self = .pin
        case .pinLocked: self = .pinLocked
        case .tokenMissing: self = .token
        case .keyRefused: self = .key
        case .badSignature: self = .verification
        case .walletMissing: self = .wallet
        case .walletBusy: self = .busy
        case .integrity: self = .integrity
        case .refused: self = .refused
        }
    }
}
