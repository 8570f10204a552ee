import SecureCrypto
import SecureToken
import Testing

@Suite("Token errors")
struct TokenErrorTests {
    /// The exit codes `secure` documents for token errors, written out so a change to either side fails here.
    @Test("each code has the kind of its documented exit code")
    func kinds() {
        let expected: [TokenError.Code: FailureKind] = [
            .pinIncorrect: .wrongPIN, .pinUnavailable: .wrongPIN, .pinLocked: .pinLocked, .pinFinalTry: .pinLocked,
            .moduleNotFound: .tokenMissing, .tokenNotFound: .tokenMissing, .tokenRemoved: .tokenMissing,
            .unsupported: .keyRefused, .keyNotFound: .keyRefused, .keyRefused: .keyRefused, .ambiguous: .keyRefused,
            .invalidURI: .usage, .pkcs11: .failure, .signatureCheckFailed: .failure,
        ]
        for code in TokenError.Code.allCases {
            #expect(TokenError(code, "x").kind == expected[code], "\(code)")
        }
    }

    @Test("the description keeps the PKCS#11 return value's C name; equality is by code")
    func description() {
        let error = TokenError(.pinIncorrect, "the PIN is wrong", returnValueName: "CKR_PIN_INCORRECT")
        #expect(error.description == "the PIN is wrong [CKR_PIN_INCORRECT]")
        #expect(error.message == "the PIN is wrong")
        #expect(error == TokenError(.pinIncorrect, "another sentence"))
    }

    /// The texts the codes had when the enum still spelled each one out: `--json` output and the docs print
    /// them, so deriving them from the case names must not change one.
    @Test("each code keeps its stable text")
    func texts() {
        let pinned: [(TokenError.Code, String)] = [
            (.pinIncorrect, "pin-incorrect"), (.pinLocked, "pin-locked"), (.pinFinalTry, "pin-final-try"),
            (.pinUnavailable, "pin-unavailable"), (.moduleNotFound, "module-not-found"),
            (.tokenNotFound, "token-not-found"), (.tokenRemoved, "token-removed"), (.keyNotFound, "key-not-found"),
            (.keyRefused, "key-refused"), (.invalidURI, "invalid-uri"), (.ambiguous, "ambiguous"),
            (.unsupported, "unsupported"), (.pkcs11, "pkcs11"), (.signatureCheckFailed, "signature-check-failed"),
        ]
        #expect(TokenError.Code.allCases.map(\.rawValue) == pinned.map(\.1))
        for (code, text) in pinned { #expect(TokenError.Code(rawValue: text) == code, "\(text)") }
    }
}
