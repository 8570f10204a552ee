import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureToken

/// One exit code per cause (docs/ARCHITECTURE.md, "Exit codes"): a token that cannot do what was asked is
/// refused (6), never reported missing (5); a failure that does not say why is a removal only when the slot
/// no longer holds the token. The pulled card itself is in the token matrix (scripts/test-tokens, "removal"),
/// through ykcs11 and OpenSC; here SoftHSM shows what the presence check answers.
@Suite("Exit causes of token failures", .serialized)
struct ExitCauseTests {
    @Test("CKR_FUNCTION_NOT_SUPPORTED and the other can-not-do values are exit 6, removals exit 5")
    func returnValuesMapToOneKindEach() {
        let cases: [(value: UInt, kind: FailureKind)] = [
            (ReturnValue.functionNotSupported, .keyRefused), (ReturnValue.mechanismInvalid, .keyRefused),
            (ReturnValue.deviceRemoved, .tokenMissing), (ReturnValue.tokenNotPresent, .tokenMissing),
            (ReturnValue.generalError, .failure), (ReturnValue.pinIncorrect, .wrongPIN),
        ]
        for (value, kind) in cases {
            #expect(pkcs11Error("C_Sign", value).kind == kind, "\(ReturnValue.name(value))")
        }
    }

    @Test("a token in its slot is present; a slot the module does not have holds none")
    func presence() throws {
        let fresh = try TestTokens.fresh("present")
        #expect(fresh.token.isPresent)
        let info = try fresh.token.module.tokenInfo(fresh.token.slot)
        let gone = Token(module: fresh.token.module, slot: fresh.token.slot &+ 1_000_003, info: info)
        #expect(!gone.isPresent)
    }
}
