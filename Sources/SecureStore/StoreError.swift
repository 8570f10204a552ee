import SecureCrypto

/// An error from the wallet's storage. Equality is by code; the message says what to do.
public typealias StoreError = CodedFailure<StoreErrorCode>

/// Stable codes for `StoreError`; the CLI maps each to a documented exit code.
public enum StoreErrorCode: String, FailureCode, CaseIterable {
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
    /// An older schema, which only a writing command upgrades; a reading command says so.
    case schemaOutdated = "schema-outdated"
    case anchorUnavailable = "anchor-unavailable"
    /// An offer already has a ready record (one payer answers one offer, once), or the record a credit
    /// should consume is missing or consumed already.
    case readyRecordExists = "ready-record-exists"
    /// An output file exists, or appeared while it was written: files are never overwritten.
    case exists = "file-exists"
    /// The wallet's folder or wallet.json belongs to another user or others may write it: wallet.json names
    /// the PKCS#11 module to load, so whoever can write it can run code as you.
    case unsafePermissions = "unsafe-permissions"

    /// The documented exit code's kind for each code.
    public var kind: FailureKind {
        switch self {
        case .walletBusy: .walletBusy
        case .walletMissing, .wrappedKeyMissing, .walletExists: .walletMissing
        case .wrongKey, .corrupted, .foreignDatabase, .malformed, .schemaTooNew, .schemaOutdated: .integrity
        case .io, .sqlite, .anchorUnavailable: .failure
        case .readyRecordExists: .refused
        case .exists, .unsafePermissions: .usage
        }
    }
}
