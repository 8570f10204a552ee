import SecureCrypto

/// An error from the wallet's storage. Equality is by code; the message says what to do.
public struct StoreError: CodedError {
    /// Stable codes; the CLI maps each to a documented exit code.
    public enum Code: String, Sendable, CaseIterable {
        case walletBusy = "wallet-busy"
        case walletMissing = "wallet-missing"
        case walletExists = "wallet-exists"
        case wrongKey = "wrong-key"
        case corrupted
        case foreignDatabase = "foreign-database"
        case wrappedKeyMissing = "wrapped-key-missing"
        case malformed
        case io
        case sqlite
        case schemaTooNew = "schema-too-new"
        case anchorUnavailable = "anchor-unavailable"
    }

    /// What kind of failure this is.
    public let code: Code
    /// A sentence a person can act on.
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The documented exit code's kind for each code.
    public var kind: FailureKind {
        switch code {
        case .walletBusy: .walletBusy
        case .walletMissing, .wrappedKeyMissing, .walletExists: .walletMissing
        case .wrongKey, .corrupted, .foreignDatabase, .malformed, .schemaTooNew: .integrity
        case .io, .sqlite, .anchorUnavailable: .failure
        }
    }
}
