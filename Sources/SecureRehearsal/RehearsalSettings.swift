import SecureCore

/// What a rehearsal plays (docs/TILL.md §4.2), with the file format's defaults. `RehearsalFile` (SecureCore)
/// parses the file; this is the engine's own view of it, so the engine can also be driven from code.
public struct RehearsalSettings: Hashable, Sendable {
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
    public var plays: RehearsalSide
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
    /// The first PIN entry of each side that its answer applies to (earlier entries are right): a till types
    /// its PIN at lock-in (entry 1), then again at the approval (entry 2).
    public var pinThisFromEntry = 1
    public var pinOtherFromEntry = 1
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
    public init(plays: RehearsalSide, ending: String) {
        self.plays = plays
        self.ending = ending
        amount = try! Money(minorUnits: 450, currency: .eur)
        balance = try! Money(minorUnits: 2_000, currency: .eur)
    }

    /// This side's role.
    public var this: RehearsalSide { plays.other }
}

extension RehearsalSettings {
    /// The settings a parsed rehearsal file gives (`RehearsalFile.parse`, docs/TILL.md §4.2).
    public init(_ file: RehearsalFile) {
        self.init(plays: file.plays, ending: file.ending.rawValue)
        amount = file.amount
        countdownMilliseconds = file.countdownMilliseconds
        balance = file.balance
        budget = file.budget.map { Budget(category: $0.category, limit: $0.limit, hard: $0.isHardCap) }
        category = file.category
        switch file.connect {
        case .after(let milliseconds): connectAfterMilliseconds = milliseconds
        case .never: connectAfterMilliseconds = nil
        }
        decideConfirms = file.decision.answer == .confirm
        decideAfterMilliseconds = file.decision.afterMilliseconds
        pinThis = RehearsalToken.PINAnswer(rawValue: file.pinThis.rawValue) ?? .right
        pinOther = RehearsalToken.PINAnswer(rawValue: file.pinOther.rawValue) ?? .right
        pinThisFromEntry = file.pinThisFromEntry
        pinOtherFromEntry = file.pinOtherFromEntry
        distanceThis = file.distanceThis
        distanceOther = file.distanceOther
        delays = Dictionary(file.delays.map { ($0.message.rawValue, $0.milliseconds) }) { first, _ in first }
        expectPayee = file.expectPayee.flatMap { ExpectedPayee(rawValue: $0.rawValue) }
        contact = file.contact
        fault = file.fault.map(Self.fault)
    }

    private static func fault(_ fault: SecureCore.RehearsalFault) -> Fault {
        switch fault {
        case .dropAfter(let message): .dropAfter(message)
        case .decline: .decline
        case .timeOutAt(let wait): .timeOutAt(wait)
        case .cancelAfter(let message): .cancelAfter(message)
        case .busy: .busy
        case .tokenRemoved(let party, let step): .tokenRemoved(this: party == .this, at: Step(rawValue: step.rawValue)!)
        case .recordFails: .recordFails
        case .refuseTransfer: .refuseTransfer
        }
    }
}
