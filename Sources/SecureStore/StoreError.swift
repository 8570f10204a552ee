/// An error from the wallet's storage. Equality is by code; the message says what to do.
public struct StoreError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Stable codes; the CLI maps each to a documented exit code.
    public enum Code: String, Sendable {
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

    public var description: String { message }

    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.code == rhs.code }
}
