import SecureCore
import SecureCrypto
import SecureWallet
import Testing

@Suite("Coded errors above the store")
struct WalletErrorTests {
    /// The exit codes `secure` documents, written out so a change to either side fails here.
    @Test("each wallet error code has the kind of its documented exit code")
    func walletKinds() {
        let expected: [WalletError.Code: FailureKind] = [
            .locked: .integrity, .verificationFailed: .integrity, .keyMismatch: .integrity, .invalidInput: .usage,
            .refused: .refused, .notFound: .refused, .noContactKey: .refused,
        ]
        for code in WalletError.Code.allCases {
            #expect(WalletError(code, "x").kind == expected[code], "\(code)")
        }
    }

    @Test("amounts and budgets are usage errors; ledger, key-event and crypto errors exit 1")
    func otherKinds() {
        #expect(MoneyError(.empty, "x").kind == .usage)
        #expect(BudgetError(.invalidCategory, "x").kind == .usage)
        #expect(LedgerError(.invalidEntry, "x").kind == .failure)
        #expect(KeyEventError(.brokenChain, "x").kind == .failure)
        #expect(CryptoError(.invalidKey, "x").kind == .failure)
        #expect(RangingError(.tooFewSamples, "x").kind == .failure)
    }
}
