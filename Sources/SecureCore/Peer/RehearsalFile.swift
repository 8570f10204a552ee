import SecureCrypto

/// A rehearsal settings file (`rehearsal 1`, docs/TILL.md §4.2): which side of a till payment the file
/// plays, the ending it must reach, and how the played side behaves (its decisions, delays, distance
/// readings, PIN and one fault). `secure till --rehearse FILE` runs the till and plays the payer from a file
/// that says `plays payer`; `secure pay --till --rehearse FILE` runs the payer and plays the till.
///
/// The parser is pure and works on bytes: it reads at most `lineCountMax` lines of at most
/// `lineByteCountMax` bytes, stops at the first error, and never traps on what it is given. Every field
/// holds its §4.2 default when the file does not set it.
public struct RehearsalFile: Hashable, Sendable {
    /// The side the file plays; this process runs the other one.
    public let plays: RehearsalSide
    /// The ending the rehearsal must reach (its `ending` line, required).
    public let ending: RehearsalEnding
    /// The till's amount (`amount`, default 4.50 EUR); always more than zero.
    public let amount: Money
    /// The till's countdown (`countdown`, default 60 s), `countdownMillisecondsMin` to `durationMillisecondsMax`.
    public let countdownMilliseconds: Int64
    /// The payer's balance, minted by the rehearsal issuer (`balance`, default 20.00 EUR). It may be in
    /// another currency than the amount: the payer then holds nothing the till asks for.
    public let balance: Money
    /// A monthly budget of the payer (`budget`), none by default.
    public let budget: RehearsalBudget?
    /// The category the payer files the payment under (`category`, default "till").
    public let category: String
    /// When the played payer connects (`connect`, default after 1 s); meaningful when the file plays the payer.
    public let connect: RehearsalConnect
    /// The played payer's decision and when it is made (`decide`, default confirm after 1 s).
    public let decision: RehearsalDecision
    /// What the token does with the PIN this side's person types (`pin this`, default right).
    public let pinThis: RehearsalPIN
    /// The first PIN entry of this side that `pinThis` applies to (`pin this wrong from 2`, default 1: every
    /// entry); earlier entries are right. A till types its PIN at lock-in (entry 1) and again when a payer
    /// connects after its hold ran low (entry 2), so `from 2` refuses only the re-ask.
    public let pinThisFromEntry: Int
    /// What the played side's token does with its PIN (`pin other`, default right).
    public let pinOther: RehearsalPIN
    /// The first PIN entry of the played side that `pinOther` applies to, as `pinThisFromEntry`.
    public let pinOtherFromEntry: Int
    /// This side's ranging readings in millimetres, always `readingCount` of them (`distance this`,
    /// default 400 mm each): the readings the file gives, repeated in order.
    public let distanceThis: [UInt32]
    /// The played side's ranging readings, as `distanceThis` (`distance other`, default 400 mm each).
    public let distanceOther: [UInt32]
    /// How long the played side waits before sending a message (`delay`), in file order, at most one per
    /// message name; none by default.
    public let delays: [RehearsalDelay]
    /// The one fault the rehearsal plays (`fault`), none by default.
    public let fault: RehearsalFault?
    /// Which wallet the payer (this side) expects to pay (`expect-payee`, files that play the till only);
    /// nil: the payer runs without `--expect-payee`.
    public let expectPayee: RehearsalExpectedPayee?
    /// The played side is a contact of this side under this name (`contact`); nil: not a contact.
    public let contact: String?

    // MARK: Limits (docs/TILL.md §4.2)

    /// At most 200 lines: the longest meaningful file has about 20 directives; the rest is room for comments.
    public static let lineCountMax = 200
    /// At most 200 bytes a line, without its line end: a directive is short, and a line that long is not one.
    public static let lineByteCountMax = 200
    /// The most bytes a file can hold and still parse (each line with a CR LF end): a reader reads at most
    /// one byte more than this, and passes what it read, so that a longer file is refused here.
    public static let byteCountMax = lineCountMax * (lineByteCountMax + 2)
    /// Durations (countdown, delays, connect, decide) are at most an hour, the till's longest countdown.
    public static let durationMillisecondsMax: Int64 = 3_600_000
    /// The till's shortest countdown (`secure till --countdown`, docs/TILL.md §1.3).
    public static let countdownMillisecondsMin: Int64 = 5_000
    /// Readings per side: ranging takes at least `RangingSummary.sampleCountMin` (10); 16 is a short burst.
    public static let readingCount = 16
    /// The longest reading, as a ranging summary accepts it.
    public static let millimetresMax: UInt32 = RangingSummary.readingMillimetresMax
    /// PIN entries a `pin … from ENTRY` can name: a till types its PIN at most twice per amount, a payer once.
    public static let pinEntryNumberMax = 8
    /// Message numbers for `drop after` / `cancel after` count up to 64: a payment takes 10 (§4.2).
    public static let messageNumberMax = 64

    /// The §4.2 defaults, used when the file does not say otherwise.
    public enum Defaults {
        /// 4.50 EUR.
        public static let amount = try! Money(minorUnits: 450, currency: .eur)
        /// 60 s.
        public static let countdownMilliseconds: Int64 = 60_000
        /// 20.00 EUR.
        public static let balance = try! Money(minorUnits: 2000, currency: .eur)
        /// "till".
        public static let category = "till"
        /// After 1 s.
        public static let connect = RehearsalConnect.after(milliseconds: 1000)
        /// Confirm after 1 s.
        public static let decision = RehearsalDecision(answer: .confirm, afterMilliseconds: 1000)
        /// 400 mm, 16 times.
        public static let distance = [UInt32](repeating: 400, count: RehearsalFile.readingCount)
    }

    /// Parses a rehearsal file. `name` is how errors name the file (the path as given).
    /// Throws `RehearsalFileError` at the first problem, naming its line.
    public static func parse(_ bytes: [UInt8], name: String) throws -> RehearsalFile {
        var parser = RehearsalFileParser(fileName: name)
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            lineNumber += 1
            guard lineNumber <= lineCountMax else {
                throw parser.error(.tooManyLines, line: lineNumber, "more than \(lineCountMax) lines")
            }
            // Look for the line end no further than the longest line allows: a 10 MB line costs 202 steps.
            let searchEnd = min(bytes.count, start + lineByteCountMax + 2)
            let newline = bytes[start..<searchEnd].firstIndex(of: UInt8(ascii: "\n"))
            guard newline != nil || searchEnd == bytes.count else {
                throw parser.error(.lineTooLong, line: lineNumber, "line longer than \(lineByteCountMax) bytes")
            }
            let lineEnd = newline ?? bytes.count
            // CR LF is accepted (a file saved on Windows): that CR is part of the line end. Any other CR is a
            // control character.
            let end = lineEnd > start && bytes[lineEnd - 1] == UInt8(ascii: "\r") ? lineEnd - 1 : lineEnd
            guard end - start <= lineByteCountMax else {
                throw parser.error(.lineTooLong, line: lineNumber, "line longer than \(lineByteCountMax) bytes")
            }
            try parser.take(Array(bytes[start..<end]), line: lineNumber)
            start = lineEnd + 1
        }
        return try parser.finish(lastLine: max(lineNumber, 1))
    }
}

/// The side a rehearsal file plays (its `plays` line); this process runs the other side.
public enum RehearsalSide: String, Hashable, Sendable, CaseIterable {
    /// The file plays the payer: run with `secure till --rehearse FILE`.
    case payer
    /// The file plays the till: run with `secure pay --till --rehearse FILE`.
    case till

    /// The side this process runs when the file plays `self`.
    public var other: RehearsalSide {
        switch self {
        case .payer: .till
        case .till: .payer
        }
    }
}

/// "this" or "other" in a file (`pin`, `distance`, `token removed`): this process's side, or the played one.
public enum RehearsalParty: String, Hashable, Sendable, CaseIterable {
    /// The side this process runs (the one the file does not play).
    case this
    /// The side the file plays.
    case other

    /// The side the party is, in a file that plays `plays`.
    public func side(whenFilePlays plays: RehearsalSide) -> RehearsalSide {
        switch self {
        case .this: plays.other
        case .other: plays
        }
    }
}

/// Whether an ending leaves a side knowing how it ended (docs/TILL.md §2, columns P and T).
public enum RehearsalSettlement: String, Hashable, Sendable, CaseIterable {
    /// Final: the side knows whether money moved.
    case final
    /// Unresolved: the side cannot know until `secure retry` runs.
    case unresolved
}

/// The endings a rehearsal file can name (`ending`): one per file in docs/TILL.md §4.3's table, each a row
/// of the endings table (§2). The raw value is the name the file writes.
public enum RehearsalEnding: String, Hashable, Sendable, CaseIterable {
    /// Row 1: paid, receipt kept.
    case paid
    /// Row 2: the payer declined at its prompt.
    case declined
    /// Row 2b: the payer withdrew after confirming, before paying.
    case withdrawn
    /// Row 3: the countdown ran out with no payer.
    case expired
    /// Row 4: the payer did not decide within the till's decision deadline.
    case decisionDeadline = "decision-deadline"
    /// Row 5: the till's operator cancelled.
    case cancelled
    /// Row 6: another payer holds the till.
    case tillBusy = "till-busy"
    /// Row 7: the payer's wallet refused (balance, budget, policy).
    case refusedByWallet = "refused-by-wallet"
    /// Row 8: refused by distance.
    case tooFar = "too-far"
    /// Row 9: the till is not the wallet the payer expects.
    case notExpectedPayee = "not-expected-payee"
    /// Row 10: the payer's token refused its PIN.
    case pinRefused = "pin-refused"
    /// Row 11: the till's token refused its PIN.
    case pinRefusedTill = "pin-refused-till"
    /// Row 12: a token was removed before the debit.
    case tokenRemoved = "token-removed"
    /// Row 13: paid, but the payer's token was removed before the receipt was kept.
    case receiptUnrecorded = "receipt-unrecorded"
    /// Rows 14 and 16: the payer debited and has no receipt; both sides unresolved until a retry.
    case unconfirmed
    /// Row 15: the link was lost before the debit.
    case linkLost = "link-lost"
    /// Row 16's other case: the link was lost after the till's `ready` was persisted but before the payer got
    /// it; the payer knows nothing moved, the till cannot know.
    case linkLostAfterReady = "link-lost-after-ready"
    /// Row 17: the till did not record the credit.
    case notRecorded = "not-recorded"
    /// Row 18: the till refused the transfer with a signed refusal; the payer reversed its debit.
    case reversed
    /// Row 19: the till timed out waiting for the transfer after `ready`.
    case unconfirmedTill = "unconfirmed-till"
    /// Row 22: a retry of an earlier unconfirmed payment, served by the till.
    case paidRetry = "paid-retry"

    /// Whether `side` ends final or unresolved (docs/TILL.md §2); nil where the side has no ending of its own
    /// (a busy till's own session goes on).
    public func settled(on side: RehearsalSide) -> RehearsalSettlement? {
        switch (self, side) {
        case (.tillBusy, .till): nil
        case (.receiptUnrecorded, .payer), (.unconfirmed, _), (.linkLostAfterReady, .till), (.notRecorded, _),
            (.unconfirmedTill, _):
            .unresolved
        default: .final
        }
    }
}

/// When the played payer connects (`connect after DURATION` or `connect never`).
public enum RehearsalConnect: Hashable, Sendable {
    /// It connects this long after the till starts counting down.
    case after(milliseconds: Int64)
    /// It never connects (the countdown runs out).
    case never
}

/// The played payer's answer at its prompt.
public enum RehearsalAnswer: String, Hashable, Sendable, CaseIterable {
    /// It confirms.
    case confirm
    /// It declines.
    case decline
}

/// The played payer's decision (`decide confirm|decline after DURATION`), counted from the request's arrival.
public struct RehearsalDecision: Hashable, Sendable {
    /// Confirm or decline.
    public let answer: RehearsalAnswer
    /// How long the person takes to answer.
    public let afterMilliseconds: Int64

    /// A decision.
    public init(answer: RehearsalAnswer, afterMilliseconds: Int64) {
        self.answer = answer
        self.afterMilliseconds = afterMilliseconds
    }
}

/// What a rehearsal token does with the PIN typed for it (`pin this|other right|wrong|locked`).
public enum RehearsalPIN: String, Hashable, Sendable, CaseIterable {
    /// The PIN is accepted.
    case right
    /// Every PIN is refused as wrong (`CKR_PIN_INCORRECT`).
    case wrong
    /// Every PIN is refused as locked (`CKR_PIN_LOCKED`).
    case locked
}

/// A monthly budget of the payer (`budget CATEGORY MONEY hard|soft`).
public struct RehearsalBudget: Hashable, Sendable {
    /// The category it limits.
    public let category: String
    /// The monthly limit.
    public let limit: Money
    /// A hard cap refuses a payment over the limit; a soft one asks for an override.
    public let isHardCap: Bool
}

/// The payment messages a rehearsal counts, delays and names: PeerMessage's names (`PeerMessage.name`)
/// except key-event and evidence messages, which a rehearsal neither counts nor delays.
public enum RehearsalMessage: String, Hashable, Sendable, CaseIterable {
    case hello, request, offer, reply, measurement, ready, transfer, receipt, refusal, failure

    /// Whether `side` ever sends this message in a till payment (the payer sends hello, offer, measurement,
    /// transfer and failure; the till the others, and hello, measurement and failure too).
    public func isSent(by side: RehearsalSide) -> Bool {
        switch self {
        case .hello, .measurement, .failure: true
        case .offer, .transfer: side == .payer
        case .request, .reply, .ready, .receipt, .refusal: side == .till
        }
    }
}

/// One `delay MESSAGE DURATION` line: the played side waits this long before sending the message.
public struct RehearsalDelay: Hashable, Sendable {
    /// The message delayed.
    public let message: RehearsalMessage
    /// How long the played side waits before sending it.
    public let milliseconds: Int64
}

/// A step at which a rehearsal token fails (`fault token removed SIDE at STEP`).
public enum RehearsalStep: String, Hashable, Sendable, CaseIterable {
    /// Signing a measurement, on either side.
    case measure
    /// The payer's debit.
    case debit
    /// The till's credit.
    case credit
    /// The payer keeping the till's receipt.
    case receipt

    /// The side that takes this step, or nil when both do.
    public var side: RehearsalSide? {
        switch self {
        case .measure: nil
        case .debit, .receipt: .payer
        case .credit: .till
        }
    }
}

/// The one fault a rehearsal plays (`fault …`, docs/TILL.md §4.2).
public enum RehearsalFault: Hashable, Sendable {
    /// The link closes once message `message` (1 … 64, counted as §4.2 says) is delivered.
    case dropAfter(message: Int)
    /// The played payer declines at once (`decide decline after 0s`).
    case decline
    /// The played side goes silent when this side waits `wait`, one of this side's waits on the peer.
    case timeOutAt(PeerWait)
    /// The played side cancels once message `message` is delivered: a till withdraws, a payer withdraws.
    case cancelAfter(message: Int)
    /// The played till answers failure 22 (till busy) instead of its hello.
    case busy
    /// `party`'s token fails from `step` on.
    case tokenRemoved(RehearsalParty, at: RehearsalStep)
    /// The played till's credit fails (storage).
    case recordFails
    /// The played till refuses the transfer finally, with a signed refusal.
    case refuseTransfer
}

/// Which wallet the payer expects to pay (`expect-payee till|other`).
public enum RehearsalExpectedPayee: String, Hashable, Sendable, CaseIterable {
    /// The played till's own wallet: the check passes.
    case till
    /// Another wallet: the check refuses the till (ending `not-expected-payee`).
    case other
}

/// Why a rehearsal file was refused: `FILE:LINE: message`. A usage error: the command line exits 2.
public struct RehearsalFileError: CodedError, Hashable {
    /// The kind of problem.
    public let code: RehearsalFileErrorCode
    /// The file's name as the caller gave it.
    public let fileName: String
    /// The 1-based line the problem is on.
    public let line: Int
    /// The sentence, without the file and line.
    public let message: String

    /// Makes an error.
    public init(_ code: RehearsalFileErrorCode, fileName: String, line: Int, _ message: String) {
        self.code = code
        self.fileName = fileName
        self.line = line
        self.message = message
    }

    /// A bad settings file is the user's input: usage.
    public var kind: FailureKind { .usage }
    /// `FILE:LINE: message`, as compilers write it.
    public var description: String { "\(fileName):\(line): \(message)" }
    /// Hashes the code only, as equality compares the code only.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// Stable codes of `RehearsalFileError`.
public enum RehearsalFileErrorCode: FailureCode, CaseNameCode {
    /// The first line is not `rehearsal 1`.
    case firstLine
    /// The second line is not `plays payer` or `plays till`.
    case secondLine
    /// A directive this format does not have.
    case unknownDirective
    /// A directive (or a fault) given twice.
    case givenTwice
    /// A directive's words do not have its shape.
    case malformed
    /// Words after a complete directive.
    case unexpectedWords
    /// A number without its unit.
    case needsUnit
    /// A duration or distance in a unit this format does not take.
    case wrongUnit
    /// A number outside its range.
    case outOfRange
    /// An amount, category, contact name or ending that is not valid.
    case invalidValue
    /// A message or wait name that is not one.
    case unknownName
    /// A directive for the other side than the one the file plays.
    case wrongSide
    /// Two directives that contradict each other.
    case conflict
    /// No `ending` line.
    case noEnding
    /// A line over `RehearsalFile.lineByteCountMax` bytes.
    case lineTooLong
    /// More than `RehearsalFile.lineCountMax` lines.
    case tooManyLines
    /// Bytes that are not UTF-8.
    case notUTF8
    /// A control or invisible character (tab, NUL, a lone CR, a byte-order mark).
    case controlCharacter

    /// A bad file is the user's input.
    public var kind: FailureKind { .usage }
}
