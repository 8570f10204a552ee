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
            .unsupported: .tokenMissing, .keyNotFound: .keyRefused, .keyRefused: .keyRefused, .ambiguous: .keyRefused,
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
}
