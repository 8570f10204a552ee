/// The till's own life around its payment sessions (issue 18, docs/TILL.md §1.1), as a pure state machine on
/// a clock the caller passes in (milliseconds). Each payer session inside it is an unchanged `PayeeMachine` in
/// request mode, driven as any other; this machine only decides when the till is open, who takes it, and when
/// it closes. It writes no payment rule: whether money moved is the payee machine's outcome.
public struct TillMachine: Hashable, Sendable {
    /// Where the till is.
    public enum State: Hashable, Sendable {
        /// The amount is typed; the operator's PIN is being read and the token unlocked. Nothing is announced.
        case locking
        /// Announced and open until `until`; the countdown is shown live.
        case countingDown(until: Int64)
        /// One payer's session holds the till; the countdown stopped with `remaining` left (a retry of an
        /// earlier payment gives it back).
        case busy(remaining: Int64)
        /// The operator cancelled before any payer took the till. Final.
        case cancelled
        /// The countdown reached zero with no payer. Final.
        case expired
        /// The payer's session ended with this outcome. Final.
        case ended(PeerOutcome)
    }

    /// What the till answers a connection whose first payment message just arrived.
    public enum Admission: Hashable, Sendable {
        /// This connection takes the till: run its payee session.
        case take
        /// Another payer holds the till: answer failure 22 (`tillBusy`) instead of the hello.
        case busy
        /// The till is closed (expired, cancelled, ended or not yet open): answer failure 3 (`timeout`).
        case closed
    }

    /// What the operator's cancel does.
    public enum Cancellation: Hashable, Sendable {
        /// The till closed; no payer was there.
        case closed
        /// A payer's session is running: withdraw it (`PayeeMachine.withdraw`, which sends failure 2 before
        /// `ready` and does nothing after, when only the payer's transfer can end it).
        case withdrawSession
        /// Already final: nothing to do.
        case none
    }

    public private(set) var state: State = .locking
    /// The countdown this amount was locked with, in milliseconds.
    public let countdownMilliseconds: Int64

    /// A till for one amount; `countdownMilliseconds` must lie within `TillMachine.countdownRange`.
    public init(countdownMilliseconds: Int64) {
        precondition(Self.countdownRange.contains(countdownMilliseconds), "the countdown is checked by the caller")
        self.countdownMilliseconds = countdownMilliseconds
    }

    /// `--countdown`: 5 s to an hour.
    public static let countdownRange: ClosedRange<Int64> = 5_000...3_600_000
    /// `--countdown`'s default: 60 s, the seed's.
    public static let countdownMillisecondsDefault: Int64 = 60_000

    /// Whether the till reached a final state for this amount.
    public var isFinal: Bool {
        switch state {
        case .cancelled, .expired, .ended: true
        case .locking, .countingDown, .busy: false
        }
    }

    /// The operator's PIN unlocked the token and the announcement is up: the countdown starts.
    public mutating func opened(now: Int64) {
        guard case .locking = state else { preconditionFailure("the till was opened twice") }
        state = .countingDown(until: now + countdownMilliseconds)
    }

    /// The countdown's time left, for the live line; nil when it is not counting (busy or final).
    public func millisecondsLeft(now: Int64) -> Int64? {
        guard case .countingDown(let until) = state else { return nil }
        return max(0, until - now)
    }

    /// Checks the clock: a countdown that reached zero with no payer expires. Returns whether it just did.
    public mutating func tick(now: Int64) -> Bool {
        guard case .countingDown(let until) = state, now >= until else { return false }
        state = .expired
        return true
    }

    /// A connection's first payment message arrived. The first one while counting down takes the till and
    /// stops the countdown; a handshake alone never does, so a scanner cannot freeze the till.
    public mutating func payerArrived(now: Int64) -> Admission {
        if tick(now: now) { return .closed }
        switch state {
        case .countingDown(let until):
            state = .busy(remaining: until - now)
            return .take
        case .busy: return .busy
        case .locking, .cancelled, .expired, .ended: return .closed
        }
    }

    /// The operator cancelled.
    public mutating func cancel() -> Cancellation {
        switch state {
        case .locking, .countingDown:
            state = .cancelled
            return .closed
        case .busy: return .withdrawSession
        case .cancelled, .expired, .ended: return .none
        }
    }

    /// The session that held the till ended. A session that only credited an earlier payment (a payer's
    /// retry: `servedRequest` false) gives the till back with the time it had left; any other ends this amount.
    public mutating func sessionEnded(_ outcome: PeerOutcome, servedRequest: Bool, now: Int64) {
        guard case .busy(let remaining) = state else {
            preconditionFailure("a session ended while the till was not busy")
        }
        if !servedRequest, remaining > 0 {
            state = .countingDown(until: now + remaining)
        } else {
            state = .ended(outcome)
        }
    }
}

/// Whether a side of a payment knows how it ended (docs/TILL.md §2, the endings table's P and T columns).
public enum Settlement: String, Hashable, Sendable {
    /// This side knows whether money moved, and it is the same on the other side.
    case final
    /// This side cannot know whether money moved: `secure retry` settles it.
    case unresolved

    /// A payer's session. Paid with its receipt kept, reversed and nothing moved are final; debited with no
    /// receipt (or a receipt that could not be recorded) is unresolved.
    public static func payer(_ outcome: PeerOutcome, receiptRecorded: Bool) -> Settlement {
        switch outcome {
        case .paid: receiptRecorded ? .final : .unresolved
        case .unconfirmed: .unresolved
        case .reversed, .failed, .received, .refusedTransfer: .final
        }
    }

    /// A payee's (a till's) session. Credited and refused with a signed refusal are final; so is a failure
    /// before the ready record was stored, and one the payer reported after it (on the payer's word: its
    /// machine never debits after sending a failure). A failure of this side, or of the link, after the ready
    /// record was stored is unresolved: the payer may have debited, and only its retry (or its absence) tells.
    public static func payee(_ outcome: PeerOutcome, readyStored: Bool) -> Settlement {
        switch outcome {
        case .received, .refusedTransfer: .final
        case .failed(_, let byPeer): readyStored && !byPeer ? .unresolved : .final
        case .paid, .reversed, .unconfirmed: .final
        }
    }
}
