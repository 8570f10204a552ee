import SecureCrypto
import SecureStore
import Testing

@Suite("Store errors")
struct StoreErrorTests {
    /// The exit codes `secure` documents for storage errors, written out so a change to either side fails here.
    @Test("each code has the kind of its documented exit code")
    func kinds() {
        let expected: [StoreError.Code: FailureKind] = [
            .walletBusy: .walletBusy, .walletMissing: .walletMissing, .wrappedKeyMissing: .walletMissing,
            .walletExists: .walletMissing, .wrongKey: .integrity, .corrupted: .integrity, .foreignDatabase: .integrity,
            .malformed: .integrity, .schemaTooNew: .integrity, .schemaOutdated: .integrity, .io: .failure,
            .sqlite: .failure,
            .anchorUnavailable: .failure, .readyRecordExists: .refused, .exists: .usage, .unsafePermissions: .usage,
        ]
        for code in StoreError.Code.allCases {
            #expect(StoreError(code, "x").kind == expected[code], "\(code)")
        }
    }
}
