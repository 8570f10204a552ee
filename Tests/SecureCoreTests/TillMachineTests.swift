import SecureCore
import Testing

@Suite struct TillMachineTests {
    private func open(countdown: Int64 = 60_000, at now: Int64 = 1_000) -> TillMachine {
        var till = TillMachine(countdownMilliseconds: countdown)
        till.opened(now: now)
        return till
    }

    @Test func countdownExpiresOnlyAtItsEnd() {
        var till = open(countdown: 10_000)
        #expect(till.millisecondsLeft(now: 4_000) == 7_000)
        let early = till.tick(now: 10_999)
        #expect(!early)
        let atEnd = till.tick(now: 11_000)
        #expect(atEnd)
        #expect(till.state == .expired)
        #expect(till.isFinal)
        let late = till.payerArrived(now: 11_001)
        #expect(late == .closed)
    }

    @Test func firstPayerTakesTheTillAndStopsTheCountdown() {
        var till = open(countdown: 10_000)
        let first = till.payerArrived(now: 5_000)
        #expect(first == .take)
        #expect(till.state == .busy(remaining: 6_000))
        #expect(till.millisecondsLeft(now: 5_000) == nil)
        let busyTick = till.tick(now: 60_000)
        #expect(!busyTick, "a busy till does not expire")
        let second = till.payerArrived(now: 5_100)
        #expect(second == .busy)
        till.sessionEnded(.failed(.declined, byPeer: true), servedRequest: true, now: 9_000)
        #expect(till.state == .ended(.failed(.declined, byPeer: true)))
        let after = till.payerArrived(now: 9_001)
        #expect(after == .closed)
    }

    @Test func aPayerArrivingAfterTheEndFindsItClosed() {
        var till = open(countdown: 5_000)
        let late = till.payerArrived(now: 6_000)
        #expect(late == .closed)
        #expect(till.state == .expired)
    }

    @Test func aRetryGivesTheTillBackWithTheTimeLeft() {
        var till = open(countdown: 10_000)
        let first = till.payerArrived(now: 3_000)
        #expect(first == .take)
        till.sessionEnded(.failed(.transferInvalid, byPeer: false), servedRequest: false, now: 20_000)
        #expect(till.state == .countingDown(until: 28_000))
        let again = till.payerArrived(now: 21_000)
        #expect(again == .take)
    }

    @Test func cancelClosesAnOpenTillAndWithdrawsARunningSession() {
        var idle = open()
        let closed = idle.cancel()
        #expect(closed == .closed)
        #expect(idle.state == .cancelled)
        let twice = idle.cancel()
        #expect(twice == .none)
        var locking = TillMachine(countdownMilliseconds: 60_000)
        let beforeOpen = locking.cancel()
        #expect(beforeOpen == .closed)
        var busy = open()
        _ = busy.payerArrived(now: 2_000)
        let running = busy.cancel()
        #expect(running == .withdrawSession)
        #expect(busy.state == .busy(remaining: 59_000), "the session's own outcome ends the amount")
    }

    @Test func settlementPerSide() {
        let transfer = TransferID.random()
        #expect(Settlement.payer(.unconfirmed(transferID: transfer), receiptRecorded: true) == .unresolved)
        #expect(Settlement.payer(.failed(.declined, byPeer: false), receiptRecorded: true) == .final)
        #expect(Settlement.payee(.failed(.localFailure, byPeer: false), readyStored: true) == .unresolved)
        #expect(Settlement.payee(.failed(.timeout, byPeer: false), readyStored: true) == .unresolved)
        #expect(Settlement.payee(.failed(.localFailure, byPeer: true), readyStored: true) == .final)
        #expect(Settlement.payee(.failed(.timeout, byPeer: false), readyStored: false) == .final)
    }
}
