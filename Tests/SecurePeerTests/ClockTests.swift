import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecureStore
@testable import SecureWallet

/// The wallet's clock against its ledger. Entry times never go backwards, so one entry dated by a clock
/// years ahead dated every later entry in that future, and a daily budget counted a real day's spending in
/// a future window (19 EUR paid under 10 EUR a day, with no `--override-budget`). An entry more than
/// `Wallet.clockJumpMillisecondsMax` past the last one is refused unless the owner accepts the clock, and a
/// refused clock opens no budget window.
@Suite("Wallet clock", .serialized)
struct ClockTests {
    static let day: Int64 = 86_400_000

    static func euros(_ text: String) throws -> Money { try MoneyText.parse(text + " EUR") }

    /// Alice with 50.00 EUR and a daily food budget of 10.00 EUR counted in UTC, and Bob to pay.
    static func aliceWithBudget(_ name: String) throws -> (alice: TestWallet, bob: TestWallet) {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded(name + "-a", "50.00 EUR", issuer: issuer)
        let budget = try Budget(
            category: "food", limit: try euros("10.00"), window: .day, isHardCap: false, timeZoneIdentifier: "UTC")
        try alice.wallet!.appendDraft(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.set(budget).payload))
        return (alice, try TestWallet(name + "-b"))
    }

    /// The reproduction: 9.50 EUR today, then the clock ten years ahead and 9.50 EUR more "in 2036". The
    /// second payment is refused before anything is signed, and the budget check made before it counts the
    /// last entry's window, so the payment is over budget rather than the first of a fresh window.
    @Test func aClockTenYearsAheadIsRefusedAndOpensNoBudgetWindow() throws {
        let (alice, bob) = try Self.aliceWithBudget("clock-ahead")
        let wallet = alice.wallet!
        alice.now += 3_600_000
        _ = try wallet.spend(to: bob.wallet!.walletID, amount: try wallet.asset("9.50 EUR"), category: "food")
        let size = wallet.size
        let lastTime = wallet.state.lastTime
        alice.now += 3652 * Self.day
        #expect(throws: Wallet.SpendRefusal.self) {
            _ = try wallet.checkSpend(amount: try wallet.asset("9.50 EUR"), category: "food", overrideBudget: false)
        }
        #expect(try wallet.spent(in: try #require(wallet.state.budgets["food"])) == Self.euros("9.50"))
        do {
            _ = try wallet.spend(to: bob.wallet!.walletID, amount: try wallet.asset("0.40 EUR"), category: "food")
            Issue.record("an entry dated ten years past the last one was appended")
        } catch let error as WalletError {
            #expect(error.code == .refused)
            #expect(error.message.contains("3652 days ahead"), "\(error.message)")
            #expect(error.message.contains("--accept-clock"), "\(error.message)")
        }
        #expect(wallet.size == size && wallet.state.lastTime == lastTime, "nothing was appended")
        // The clock set right again: the next entry is dated by it, in the same day's window.
        alice.now -= 3652 * Self.day
        #expect(throws: Wallet.SpendRefusal.self) {
            _ = try wallet.checkSpend(amount: try wallet.asset("9.50 EUR"), category: "food", overrideBudget: false)
        }
        let entry = try wallet.spend(to: bob.wallet!.walletID, amount: try wallet.asset("0.40 EUR"), category: "food")
        #expect(entry.payload.checkpoint.checkpoint.time == alice.now)
        #expect(try LedgerVerifier.verify(wallet.ledger, walletID: wallet.walletID).isValid)
    }

    /// A wallet left unused for longer than the limit: its owner says the clock is right, and the entry is
    /// dated by it. Within the limit nobody is asked.
    @Test func theOwnerCanAcceptAClockPastTheLimitAndWithinItNobodyIsAsked() throws {
        let (alice, _) = try Self.aliceWithBudget("clock-accept")
        let wallet = alice.wallet!
        alice.now += Wallet.clockJumpMillisecondsMax
        let within = try wallet.appendDraft(Self.budgetRemoval())
        #expect(within.time == alice.now, "exactly the limit is not past it")
        alice.now += Wallet.clockJumpMillisecondsMax + 1
        #expect(throws: WalletError(.refused, "")) { try wallet.appendDraft(Self.budgetSet()) }
        wallet.acceptsClockJump = true
        let accepted = try wallet.appendDraft(Self.budgetSet())
        #expect(accepted.time == alice.now)
        #expect(try LedgerVerifier.verify(wallet.ledger, walletID: wallet.walletID).isValid)
    }

    /// A clock behind the last entry (a lost real-time clock, or a last entry dated by an accepted clock that
    /// was wrong after all) is not refused: the entry takes the last entry's time, as entry times never go
    /// backwards, and stays in the last entry's budget windows, which is the cautious side.
    @Test func aClockBehindTheLastEntryDatesTheEntryAtTheLastEntry() throws {
        let (alice, bob) = try Self.aliceWithBudget("clock-behind")
        let wallet = alice.wallet!
        alice.now += 3_600_000
        _ = try wallet.spend(to: bob.wallet!.walletID, amount: try wallet.asset("9.50 EUR"), category: "food")
        let lastTime = wallet.state.lastTime
        alice.now -= 400 * Self.day
        #expect(throws: Wallet.SpendRefusal.self) {
            _ = try wallet.checkSpend(amount: try wallet.asset("9.50 EUR"), category: "food", overrideBudget: false)
        }
        let entry = try wallet.appendDraft(Self.budgetRemoval())
        #expect(entry.time == lastTime)
    }

    /// The `secure` binary on a wallet whose last entry is 40 days old: a command that appends refuses,
    /// saying how far ahead the clock is and what to do; with `--accept-clock` it appends, and after that
    /// the clock is within the limit again.
    @Test func theBinaryRefusesAClockPastTheLimitUnlessToldToAcceptIt() throws {
        let test = try TestWallet("clock-cli")
        test.now = Wallet.systemClock() - 40 * Self.day
        test.wallet!.acceptsClockJump = true // the fixture's inception is dated 2026-01-01
        try test.setBudget("food", "10.00 EUR")
        test.close()
        let wallet = ["--wallet", test.paths.directory, "--pin-source", "file:" + test.main.pinPath]
        let set = ["budget", "set", "food", "20.00 EUR", "--time-zone", "UTC"] + wallet
        let refused = try Run.program(Run.secure, set)
        #expect(refused.status == 11, "exit \(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("40 days ahead"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--accept-clock"), "\(refused.stderr)")
        let accepted = try Run.program(Run.secure, set + ["--accept-clock"])
        #expect(accepted.status == 0, "exit \(accepted.status): \(accepted.stderr)")
        let again = try Run.program(Run.secure, set)
        #expect(again.status == 0, "exit \(again.status): \(again.stderr)")
        let reading = try Run.program(Run.secure, ["budget", "show", "--accept-clock"] + wallet)
        #expect(reading.status == 2, "a command that only reads takes no --accept-clock: \(reading.stderr)")
        let verify = try Run.program(Run.secure, ["ledger", "verify"] + wallet)
        #expect(verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
    }

    static func budgetSet() throws -> EntryDraft {
        let budget = try Budget(
            category: "rent", limit: try euros("900.00"), window: .month, isHardCap: false, timeZoneIdentifier: "UTC")
        return EntryDraft(
            kind: .budgetChange, amount: nil, category: "rent", statement: nil,
            payload: BudgetChange.set(budget).payload)
    }

    static func budgetRemoval() -> EntryDraft {
        EntryDraft(
            kind: .budgetChange, amount: nil, category: "food", statement: nil,
            payload: BudgetChange.remove(category: "food").payload)
    }
}
