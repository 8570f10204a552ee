/// Every limit a peer session enforces, in one place beside `ChannelLimits`: waits, counts and sizes, each
/// named with its qualifier last and saying why it has its value. A peer that exceeds one ends the session
/// before anything is recorded; nothing it sends is buffered past these.
public enum PeerLimits {
    // MARK: Waits (docs/PROTOCOL.md, "Timeouts")

    /// The peer's `hello` follows the handshake at machine speed.
    public static let helloTimeoutSeconds = 10
    /// A person's decision (approve, pick a category, accept an offer): long enough to read a prompt, and
    /// short enough that an honest payment fits in the approving side's 60 s PIN hold (`pinHoldMillisecondsMax`):
    /// the payer's decision wait plus ranging (20 s) and a few machine steps stay below it.
    public static let decisionTimeoutSeconds = 30
    /// Ranging (at least 10 samples at a few hertz) plus a token signature, on either side.
    public static let rangingTimeoutSeconds = 20
    /// A machine-speed step: a token signature, a durable commit, a lookup, and the message it answers.
    public static let stepTimeoutSeconds = 15
    /// The PIN is held for the machine-speed steps after an approval, and never longer than this: a decision
    /// wait plus a step, with room to spare, and short enough that an abandoned session does not leave the
    /// token unlocked.
    public static let pinHoldMillisecondsMax: Int64 = 60_000

    // MARK: Counts

    /// Evidence and key-event messages a session answers at most; a peer that asks more is flooding. Room
    /// for two full key-event logs paged each way (16 requests and 16 pages of `KeyEventLog.eventCountMax`
    /// events) and the evidence a hello can name.
    public static let sideMessageCountMax = 96
    /// Protocol messages held while a lookup waits for the peer's key events: an honest peer sends at most
    /// its offer or request and a failure meanwhile; one more is a flood, and the session ends before any debit.
    public static let heldMessageCountMax = 8
    /// Key events in one page of a key-event log: 64 signed events are at most 70,848 bytes, a quarter of a
    /// peer message's limit, and a log of `KeyEventLog.eventCountMax` (1,024) events takes 16 pages.
    public static let keyEventPageEventCountMax = 64
}

/// The limits of a till (docs/TILL.md §1.3, §1.4): its countdown, its PIN hold and the payer's decision
/// deadline. The decision deadline is a constant of till protocol `v=1`, so both sides know it without a
/// message.
public enum TillLimits {
    /// `secure till --countdown` when not given: the seed's minute.
    public static let countdownSecondsDefault = 60
    /// The shortest countdown: time for a payer to find the till and connect.
    public static let countdownSecondsMin = 5
    /// The longest countdown: an hour; a till left longer should be started again.
    public static let countdownSecondsMax = 3600
    /// The lock-in PIN's hold, absolute from its entry: the payer's 60 s hold (`PeerLimits.pinHoldMillisecondsMax`).
    public static let pinHoldSeconds = Int(PeerLimits.pinHoldMillisecondsMax / 1000)
    /// A payer connecting with less hold left than this makes the till ask the PIN again, at connect: the
    /// 20 s decision, a few seconds of ranging (16 readings) and the 10 s kept after `ready`.
    public static let pinReserveAtConnectSeconds = 40
    /// The decision deadline, counted from the till's `request`: shorter than the ordinary 30 s offer wait,
    /// so that decision, ranging and the steps after `ready` fit in one 60 s PIN hold.
    public static let decisionSeconds = 20
    /// `decisionSeconds` in milliseconds, on the environment's clock.
    public static let decisionMilliseconds = Int64(decisionSeconds) * 1000
    /// The till's hold time that must remain when `ready` would go out: the credit and the receipt need the
    /// token after it, and the payer's transfer may take the whole transfer wait (15 s, `PeerWait.transfer`)
    /// to arrive; 2 s more for the credit's signature and commit. With less left, the session ends before
    /// `ready` (nothing moved) instead of a `ready` whose transfer could find the hold gone (unresolved).
    public static let afterReadyMilliseconds: Int64 = Int64(PeerLimits.stepTimeoutSeconds) * 1000 + 2_000
    /// The payer's prompt closes this much before the till's deadline, so that its offer arrives in time.
    public static let payerDecisionMarginMilliseconds: Int64 = 2_000
}
