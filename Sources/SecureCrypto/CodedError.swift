/// What kind of failure an error is, across every module: the command line turns each kind into one
/// documented exit code, so a new error type needs no new `catch` in `main`.
public enum FailureKind: String, Hashable, Sendable, CaseIterable {
    /// Anything not named below.
    case failure
    /// The user's input is malformed: arguments, amounts, a missing argument file.
    case usage
    /// A wrong or missing PIN.
    case wrongPIN
    /// A PIN that is locked, or on its final try.
    case pinLocked
    /// A PKCS#11 module or token that is missing or was removed.
    case tokenMissing
    /// A key that is missing, ambiguous or refused, or a token that cannot do what was asked.
    case keyRefused
    /// A signature that does not verify.
    case badSignature
    /// No wallet where one was expected, or one where none may be.
    case walletMissing
    /// Another process holds the wallet.
    case walletBusy
    /// The wallet's integrity: wrong key, corrupted or foreign database, a rollback lock, failed verification.
    case integrity
    /// A refusal by policy: budget, balance, or a statement the wallet will not record.
    case refused
}

/// An error that a peer, a token or the user can cause: a stable code, a sentence a person can act on,
/// and equality by code (the sentence is diagnostics, never compared). Every public error type of the
/// package conforms; `kind` says which exit code the command line gives it.
public protocol CodedError: Error, CustomStringConvertible, Equatable, Sendable {
    associatedtype Code: StableCode
    /// The stable code.
    var code: Code { get }
    /// A sentence a person can act on.
    var message: String { get }
    /// What kind of failure this is.
    var kind: FailureKind { get }
}

extension CodedError {
    public var description: String { message }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// The stable code as text, for `--json` and logs.
    public var codeName: String { code.rawValue }
}

/// A stable code: its text is a public interface (`--json` output, logs, docs, tests), so it never changes.
public protocol StableCode: Hashable, Sendable {
    /// The stable text.
    var rawValue: String { get }
}

/// A stable code whose text is its case name in kebab case (`invalidEntry` is "invalid-entry"), so an enum of
/// codes lists each case once. A case whose published text differs from the derived one is named in the enum's
/// own `rawValue`, which returns `derivedCode` for the others. Deliberately not `RawRepresentable`: the standard
/// library would then compare and hash the codes through their text, where the compiler's own equality and
/// hashing of the cases is exact and cheap.
public protocol CaseNameCode: StableCode, CaseIterable {}

extension CaseNameCode {
    /// The case name in kebab case: a hyphen starts each word after the first, and a run of capitals is one
    /// word (`invalidURI` is "invalid-uri", `notANumber` is "not-a-number").
    public var derivedCode: String {
        let name = Array(String(describing: self))
        var code = ""
        for (index, character) in name.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = name[index - 1]
                let afterWord = previous.isLowercase || previous.isNumber
                let startsWordAfterCapitals =
                    previous.isUppercase && index + 1 < name.count && name[index + 1].isLowercase
                if afterWord || startsWordAfterCapitals { code.append("-") }
            }
            code.append(contentsOf: character.lowercased())
        }
        return code
    }

    /// The stable text.
    public var rawValue: String { derivedCode }

    /// The code whose stable text this is, or nil for text that names none.
    public init?(rawValue: String) {
        guard let code = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = code
    }
}

/// A stable error code that knows which exit code's kind it has: the one thing each error type declares.
public protocol FailureCode: StableCode {
    /// What kind of failure this code is.
    var kind: FailureKind { get }
}

/// The one error struct: a code and a sentence. Error types without fields of their own are aliases of it
/// (`LedgerError = CodedFailure<LedgerErrorCode>`), so each declares only its codes and their kinds; the
/// code type keeps them apart, so `catch let error as LedgerError` catches ledger errors only.
public struct CodedFailure<Code: FailureCode>: CodedError, Hashable {
    /// What kind of failure this is.
    public let code: Code
    /// A sentence a person can act on.
    public let message: String

    /// Makes an error with a code and a sentence.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The code's kind.
    public var kind: FailureKind { code.kind }

    /// Hashes the code only, as equality compares the code only.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
