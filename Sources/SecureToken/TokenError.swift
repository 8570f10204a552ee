import SecureCrypto

/// An error from a token, a module, a PIN source or a URI. Equality is by code. PKCS#11 failures keep
/// the C name of their return value (`CKR_PIN_INCORRECT`) so a person can look it up, and every error
/// carries a sentence saying what to do.
public struct TokenError: CodedError {
    /// Stable codes. The CLI maps each to a documented exit code.
    public enum Code: CaseNameCode {
        case pinIncorrect
        case pinLocked
        case pinFinalTry
        case pinUnavailable
        case moduleNotFound
        case tokenNotFound
        case tokenRemoved
        case keyNotFound
        case keyRefused
        case invalidURI
        case ambiguous
        case unsupported
        case pkcs11
        case signatureCheckFailed
    }

    /// What kind of failure this is.
    public let code: Code
    /// The PKCS#11 return value's C name, when a C_* call was the cause.
    public let returnValueName: String?
    /// A sentence a person can act on.
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String, returnValueName: String? = nil) {
        self.code = code
        self.message = message
        self.returnValueName = returnValueName
    }

    public var description: String {
        guard let name = returnValueName else { return message }
        return "\(message) [\(name)]"
    }

    /// The documented exit code's kind for each code.
    public var kind: FailureKind {
        switch code {
        case .pinIncorrect, .pinUnavailable: .wrongPIN
        case .pinLocked, .pinFinalTry: .pinLocked
        case .moduleNotFound, .tokenNotFound, .tokenRemoved: .tokenMissing
        // A token that cannot do what was asked (CKR_FUNCTION_NOT_SUPPORTED, no ECDH, no per-signature PIN) is
        // there: it is refused like a key, never reported as missing.
        case .keyNotFound, .keyRefused, .ambiguous, .unsupported: .keyRefused
        case .invalidURI: .usage
        case .pkcs11, .signatureCheckFailed: .failure
        }
    }
}
