import SecureCore

/// What a rehearsal plays (docs/TILL.md §4.2), with the file format's defaults. `RehearsalFile` (SecureCore)
/// parses the file; this is the engine's own view of it, so the engine can also be driven from code.
public struct RehearsalSettings: Hashable, Sendable {
    /// A side of the till payment.
    public enum Role: String, Hashable, Sendable {
        case payer, till
    }

    /// The step from which a token fails (`fault token removed SIDE at STEP`).
    public enum Step: String, Hashable, Sendable, CaseIterable {
        case measure, debit, credit, receipt
    }

    /// The one fault a rehearsal plays.
    public enum Fault: Hashable, Sendable {
        /// The link closes once message N is delivered.
        case dropAfter(Int)
        /// The played side's person declines at once.
        case decline
        /// The played side goes silent when this side waits for this.
        case timeOutAt(PeerWait)
        /// The played side cancels once message N is delivered (a till withdraws, a payer withdraws).
        case cancelAfter(Int)
        /// Plays till: another payer holds it (failure 22 instead of the hello).
        case busy
        /// That side's token fails from that step on (`this`: the side the file does not play).
        case tokenRemoved(this: Bool, at: Step)
        /// Plays till: the credit fails (storage).
        case recordFails
        /// Plays till: the credit is refused finally, with a signed refusal (reason 6).
        case refuseTransfer
    }

    /// Plays till: whom the payer (this side) expects.
    public enum ExpectedPayee: String, Hashable, Sendable {
        /// The till itself: the check passes.
        case till
        /// Another wallet: the till is refused.
        case other
    }

    /// The side the file plays; this side (the person at the terminal) is the other one.
    public var plays: Role
    /// The ending the rehearsal must reach (a name from docs/TILL.md §4.3).
    public var ending: String
    public var amount: Money
    public var countdownMilliseconds: Int64 = 60_000
    /// The payer's balance, minted by the rehearsal issuer.
    public var balance: Money
    /// A monthly budget of the payer.
    public var budget: Budget?
    public var category = "till"
    /// Plays payer: when it connects, after the till opens; nil: never.
    public var connectAfterMilliseconds: Int64? = 1_000
    /// The played side's person: confirm or decline, after this long.
    public var decideConfirms = true
    public var decideAfterMilliseconds: Int64 = 1_000
    public var pinThis: RehearsalToken.PINAnswer = .right
    public var pinOther: RehearsalToken.PINAnswer = .right
    /// Ranging readings in millimetres, in order, repeated to 16.
    public var distanceThis: [UInt32] = [400]
    public var distanceOther: [UInt32] = [400]
    /// The played side waits this long before sending a message of this name (`PeerMessage.name`).
    public var delays: [String: Int64] = [:]
    public var fault: Fault?
    public var expectPayee: ExpectedPayee?
    /// The played side is a contact of this side, under this name.
    public var contact: String?

    /// A monthly budget: its category, its limit, and whether it is a hard cap.
    public struct Budget: Hashable, Sendable {
        public var category: String
        public var limit: Money
        public var hard: Bool

        public init(category: String, limit: Money, hard: Bool) {
            self.category = category
            self.limit = limit
            self.hard = hard
        }
    }

    /// The defaults of the file format: 4.50 EUR at the till, 20.00 EUR on the payer.
    public init(plays: Role, ending: String) {
        self.plays = plays
        self.ending = ending
        amount = try! Money(minorUnits: 450, currency: .eur)
        balance = try! Money(minorUnits: 2_000, currency: .eur)
    }

    /// This side's role.
    public var this: Role { plays == .payer ? .till : .payer }
}
