import SecureCrypto

/// The line-by-line reader behind `RehearsalFile.parse`: it takes each line's bytes (without the line end),
/// checks them, and fills the fields; `finish` applies the defaults. Kept apart so that `RehearsalFile`
/// reads as the format's description.
struct RehearsalFileParser {
    let fileName: String

    private var sawHeader = false
    private var plays: RehearsalSide?
    /// Directive keys given so far ("amount", "pin this", "delay transfer"), for "given twice".
    private var given: Set<String> = []

    private var ending: RehearsalEnding?
    private var amount = RehearsalFile.Defaults.amount
    private var countdownMilliseconds = RehearsalFile.Defaults.countdownMilliseconds
    private var balance = RehearsalFile.Defaults.balance
    private var budget: RehearsalBudget?
    private var category = RehearsalFile.Defaults.category
    private var connect = RehearsalFile.Defaults.connect
    private var decision = RehearsalFile.Defaults.decision
    private var pinThis = RehearsalPIN.right
    private var pinOther = RehearsalPIN.right
    private var pinThisFromEntry = 1
    private var pinOtherFromEntry = 1
    private var distanceThis = RehearsalFile.Defaults.distance
    private var distanceOther = RehearsalFile.Defaults.distance
    private var delays: [RehearsalDelay] = []
    private var fault: RehearsalFault?
    private var expectPayee: RehearsalExpectedPayee?
    private var contact: String?

    init(fileName: String) {
        self.fileName = fileName
    }

    /// The directives, in the order the format lists them, each with its shape for error messages.
    static let directives: [(name: String, usage: String)] = [
        ("ending", "ending NAME"),
        ("amount", "amount MONEY (as in amount 4.50 EUR)"),
        ("countdown", "countdown DURATION"),
        ("balance", "balance MONEY (as in balance 20.00 EUR)"),
        ("budget", "budget CATEGORY MONEY hard|soft"),
        ("category", "category CATEGORY"),
        ("connect", "connect after DURATION, or connect never"),
        ("decide", "decide confirm|decline after DURATION"),
        ("pin", "pin this|other right|wrong|locked [from ENTRY]"),
        ("distance", "distance this|other MM … (as in distance this 400mm 410mm)"),
        ("delay", "delay MESSAGE DURATION"),
        ("fault", "fault FAULT"),
        ("expect-payee", "expect-payee till|other"),
        ("contact", "contact NAME"),
    ]

    /// The faults, as the error for an unknown one lists them.
    static let faultForms = [
        "drop after N", "decline", "time out at WAIT", "cancel after N", "busy", "token removed this|other at STEP",
        "record fails", "refuse transfer",
    ]

    /// The waits on the peer each side has (PayerMachine.wait and PayeeMachine.wait in a till payment):
    /// `fault time out at WAIT` silences the played side while this side waits on it, so WAIT is one of these.
    static func peerWaits(of side: RehearsalSide) -> [PeerWait] {
        switch side {
        case .payer: [.peerHello, .request, .reply, .ready, .receipt]
        case .till: [.peerHello, .offer, .peerMeasurement, .transfer]
        }
    }

    func error(_ code: RehearsalFileErrorCode, line: Int, _ message: String) -> RehearsalFileError {
        RehearsalFileError(code, fileName: fileName, line: line, message)
    }

    // MARK: Lines

    /// Takes one line's bytes, without its line end (at most `RehearsalFile.lineByteCountMax`).
    mutating func take(_ bytes: [UInt8], line: Int) throws {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw error(.notUTF8, line: line, "not UTF-8") }
        let text = String(decoding: bytes, as: UTF8.self)
        if let scalar = text.unicodeScalars.first(where: PeerText.isUnsafe) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            throw error(
                .controlCharacter, line: line,
                "a control or invisible character (\(code)) in the line; separate words with spaces")
        }
        // `#` is ASCII, so cutting the bytes there and splitting on spaces keeps every word valid UTF-8.
        let content = bytes.prefix { $0 != UInt8(ascii: "#") }
        let words = content.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        guard !words.isEmpty else { return }
        if !sawHeader {
            try header(words, line: line)
        } else if let plays {
            try directive(words, line: line, plays: plays)
        } else {
            guard words.count == 2, words[0] == "plays", let side = RehearsalSide(rawValue: words[1]) else {
                throw error(.secondLine, line: line, "the second line must be \"plays payer\" or \"plays till\"")
            }
            plays = side
        }
    }

    private mutating func header(_ words: [String], line: Int) throws {
        guard words == ["rehearsal", "1"] else {
            let version =
                words.count == 2 && words[0] == "rehearsal"
                ? " (this build reads version 1; the file says \"rehearsal \(words[1])\")" : ""
            throw error(.firstLine, line: line, "the first line must be \"rehearsal 1\"\(version)")
        }
        sawHeader = true
    }

    /// The file after its last line: the ending is required; every other field keeps its default.
    func finish(lastLine: Int) throws -> RehearsalFile {
        guard sawHeader else {
            throw error(.firstLine, line: lastLine, "the first line must be \"rehearsal 1\"")
        }
        guard let plays else {
            throw error(.secondLine, line: lastLine, "the second line must be \"plays payer\" or \"plays till\"")
        }
        guard let ending else { throw error(.noEnding, line: lastLine, "no \"ending\" line") }
        return RehearsalFile(
            plays: plays, ending: ending, amount: amount, countdownMilliseconds: countdownMilliseconds,
            balance: balance, budget: budget, category: category, connect: connect, decision: decision,
            pinThis: pinThis, pinThisFromEntry: pinThisFromEntry, pinOther: pinOther,
            pinOtherFromEntry: pinOtherFromEntry, distanceThis: distanceThis, distanceOther: distanceOther,
            delays: delays, fault: fault, expectPayee: expectPayee, contact: contact)
    }

    // MARK: Directives

    private mutating func directive(_ words: [String], line: Int, plays: RehearsalSide) throws {
        let name = words[0]
        guard let usage = Self.directives.first(where: { $0.name == name })?.usage else {
            let names = Self.directives.map(\.name).joined(separator: ", ")
            throw error(.unknownDirective, line: line, "unknown directive \"\(name)\" (one of: \(names))")
        }
        let shape = Shape(words: words, usage: usage, line: line, fileName: fileName)
        switch name {
        case "ending": try endingLine(shape)
        case "amount", "balance": try moneyLine(shape)
        case "countdown": try countdownLine(shape)
        case "budget": try budgetLine(shape)
        case "category": try categoryLine(shape)
        case "connect": try connectLine(shape, plays: plays)
        case "decide": try decideLine(shape, plays: plays)
        case "pin": try pinLine(shape)
        case "distance": try distanceLine(shape)
        case "delay": try delayLine(shape, plays: plays)
        case "fault": try faultLine(shape, plays: plays)
        case "expect-payee": try expectPayeeLine(shape, plays: plays)
        default: try contactLine(shape)
        }
    }

    /// Records a directive key; a second time is an error.
    private mutating func once(_ key: String, line: Int) throws {
        guard given.insert(key).inserted else { throw error(.givenTwice, line: line, "\"\(key)\" given twice") }
    }

    private func requirePlays(_ side: RehearsalSide, _ what: String, line: Int, plays: RehearsalSide) throws {
        guard plays == side else { throw error(.wrongSide, line: line, "\"\(what)\" needs \"plays \(side)\"") }
    }

    private mutating func endingLine(_ shape: Shape) throws {
        let slots = try shape.match(["ending", "NAME"])
        guard let value = RehearsalEnding(rawValue: slots[0]) else {
            let names = RehearsalEnding.allCases.map(\.rawValue).joined(separator: ", ")
            throw error(.invalidValue, line: shape.line, "\"\(slots[0])\" is not an ending (one of: \(names))")
        }
        try once("ending", line: shape.line)
        ending = value
    }

    private mutating func moneyLine(_ shape: Shape) throws {
        let name = shape.words[0]
        // One word is passed on too, so that "4.50EUR" gets the money parser's own advice.
        let slots = try shape.words.count == 2 ? [shape.words[1]] : shape.match([name, "NUMBER", "CURRENCY"])
        let money = try shape.money(slots.joined(separator: " "))
        try once(name, line: shape.line)
        if name == "amount" {
            guard !money.isZero else {
                throw error(.invalidValue, line: shape.line, "a till's amount must be more than zero")
            }
            amount = money
        } else {
            balance = money
        }
    }

    private mutating func countdownLine(_ shape: Shape) throws {
        let slots = try shape.match(["countdown", "DURATION"])
        let milliseconds = try shape.duration(slots[0])
        guard milliseconds >= RehearsalFile.countdownMillisecondsMin else {
            throw error(
                .outOfRange, line: shape.line,
                "a countdown of \"\(slots[0])\" is under \(RehearsalFile.countdownMillisecondsMin / 1000) s, the shortest"
            )
        }
        try once("countdown", line: shape.line)
        countdownMilliseconds = milliseconds
    }

    private mutating func budgetLine(_ shape: Shape) throws {
        // budget CATEGORY MONEY hard|soft: the category first, the hardness last, the amount between.
        guard shape.words.count >= 4 else { throw shape.malformed() }
        let category = try shape.category(shape.words[1])
        let money = try shape.money(shape.words[2..<(shape.words.count - 1)].joined(separator: " "))
        let hardness = shape.words[shape.words.count - 1]
        guard hardness == "hard" || hardness == "soft" else { throw shape.malformed() }
        try once("budget", line: shape.line)
        budget = RehearsalBudget(category: category, limit: money, isHardCap: hardness == "hard")
    }

    private mutating func categoryLine(_ shape: Shape) throws {
        let slots = try shape.match(["category", "CATEGORY"])
        let value = try shape.category(slots[0])
        try once("category", line: shape.line)
        category = value
    }

    private mutating func connectLine(_ shape: Shape, plays: RehearsalSide) throws {
        try requirePlays(.payer, "connect", line: shape.line, plays: plays)
        let value: RehearsalConnect
        if shape.words.count >= 2, shape.words[1] == "never" {
            _ = try shape.match(["connect", "never"])
            value = .never
        } else {
            value = .after(milliseconds: try shape.duration(try shape.match(["connect", "after", "DURATION"])[0]))
        }
        try once("connect", line: shape.line)
        connect = value
    }

    private mutating func decideLine(_ shape: Shape, plays: RehearsalSide) throws {
        try requirePlays(.payer, "decide", line: shape.line, plays: plays)
        let slots = try shape.match(["decide", "ANSWER", "after", "DURATION"])
        guard let answer = RehearsalAnswer(rawValue: slots[0]) else { throw shape.malformed() }
        let milliseconds = try shape.duration(slots[1])
        try once("decide", line: shape.line)
        if fault == .decline { throw declineConflict(line: shape.line) }
        decision = RehearsalDecision(answer: answer, afterMilliseconds: milliseconds)
    }

    private func declineConflict(line: Int) -> RehearsalFileError {
        error(
            .conflict, line: line,
            "\"fault decline\" and \"decide\" both say what the payer decides; keep one "
                + "(\"fault decline\" is \"decide decline after 0s\")")
    }

    private mutating func pinLine(_ shape: Shape) throws {
        let hasFrom = shape.words.count > 3 && shape.words[3] == "from"
        let slots = try shape.match(hasFrom ? ["pin", "PARTY", "PIN", "from", "ENTRY"] : ["pin", "PARTY", "PIN"])
        guard let party = RehearsalParty(rawValue: slots[0]), let pin = RehearsalPIN(rawValue: slots[1]) else {
            throw shape.malformed()
        }
        var fromEntry = 1
        if hasFrom {
            guard pin != .right else {
                throw error(
                    .malformed, line: shape.line, "\"from\" goes with wrong or locked: earlier entries are right")
            }
            fromEntry = try shape.pinEntry(slots[2])
        }
        try once("pin \(party.rawValue)", line: shape.line)
        switch party {
        case .this: (pinThis, pinThisFromEntry) = (pin, fromEntry)
        case .other: (pinOther, pinOtherFromEntry) = (pin, fromEntry)
        }
    }

    private mutating func distanceLine(_ shape: Shape) throws {
        guard shape.words.count >= 3, let party = RehearsalParty(rawValue: shape.words[1]) else {
            throw shape.malformed()
        }
        let given = shape.words[2...]
        guard given.count <= RehearsalFile.readingCount else {
            throw error(
                .outOfRange, line: shape.line,
                "\(given.count) readings; \"distance\" takes at most \(RehearsalFile.readingCount)")
        }
        let readings = try given.map { try shape.millimetres($0) }
        try once("distance \(party.rawValue)", line: shape.line)
        let repeated = (0..<RehearsalFile.readingCount).map { readings[$0 % readings.count] }
        switch party {
        case .this: distanceThis = repeated
        case .other: distanceOther = repeated
        }
    }

    private mutating func delayLine(_ shape: Shape, plays: RehearsalSide) throws {
        let slots = try shape.match(["delay", "MESSAGE", "DURATION"])
        guard let message = RehearsalMessage(rawValue: slots[0]) else {
            let names = RehearsalMessage.allCases.map(\.rawValue).joined(separator: ", ")
            throw error(.unknownName, line: shape.line, "\"\(slots[0])\" is not a message name (\(names))")
        }
        guard message.isSent(by: plays) else {
            throw error(
                .wrongSide, line: shape.line,
                "\"delay \(message.rawValue)\" needs \"plays \(plays.other)\" (the played side delays what it sends, "
                    + "and only the \(plays.other) sends \(message.rawValue))")
        }
        let milliseconds = try shape.duration(slots[1])
        try once("delay \(message.rawValue)", line: shape.line)
        delays.append(RehearsalDelay(message: message, milliseconds: milliseconds))
    }

    private mutating func expectPayeeLine(_ shape: Shape, plays: RehearsalSide) throws {
        try requirePlays(.till, "expect-payee", line: shape.line, plays: plays)
        let slots = try shape.match(["expect-payee", "WHO"])
        guard let value = RehearsalExpectedPayee(rawValue: slots[0]) else { throw shape.malformed() }
        try once("expect-payee", line: shape.line)
        expectPayee = value
    }

    private mutating func contactLine(_ shape: Shape) throws {
        // A name may hold spaces: the words after "contact", joined by one space.
        guard shape.words.count >= 2 else { throw shape.malformed() }
        let name = shape.words[1...].joined(separator: " ")
        if let problem = ContactName.problem(name) { throw error(.invalidValue, line: shape.line, problem) }
        try once("contact", line: shape.line)
        contact = name
    }

    // MARK: Faults

    private mutating func faultLine(_ shape: Shape, plays: RehearsalSide) throws {
        guard given.insert("fault").inserted else {
            throw error(.givenTwice, line: shape.line, "\"fault\" given twice: a rehearsal plays one fault")
        }
        let value = try faultValue(shape, plays: plays)
        if value == .decline, given.contains("decide") { throw declineConflict(line: shape.line) }
        fault = value
    }

    private func faultValue(_ shape: Shape, plays: RehearsalSide) throws -> RehearsalFault {
        let kind = shape.words.count >= 2 ? shape.words[1] : ""
        switch kind {
        case "drop":
            return .dropAfter(message: try shape.messageNumber(shape.match(["fault", "drop", "after", "N"])[0]))
        case "cancel":
            return .cancelAfter(message: try shape.messageNumber(shape.match(["fault", "cancel", "after", "N"])[0]))
        case "decline":
            _ = try shape.match(["fault", "decline"])
            try requirePlays(.payer, "decline", line: shape.line, plays: plays)
            return .decline
        case "busy", "record", "refuse":
            let words = ["busy": ["busy"], "record": ["record", "fails"], "refuse": ["refuse", "transfer"]][kind]!
            _ = try shape.match(["fault"] + words)
            try requirePlays(.till, words.joined(separator: " "), line: shape.line, plays: plays)
            return ["busy": .busy, "record": .recordFails, "refuse": .refuseTransfer][kind]!
        case "time": return .timeOutAt(try timeOutWait(shape, plays: plays))
        case "token": return try tokenRemoved(shape, plays: plays)
        default:
            let forms = Self.faultForms.joined(separator: ", ")
            let text = shape.words.joined(separator: " ")
            throw error(.malformed, line: shape.line, "\"\(text)\" is not a fault (one of: \(forms))")
        }
    }

    /// `time out at WAIT`: WAIT must be a wait of this side on the played side.
    private func timeOutWait(_ shape: Shape, plays: RehearsalSide) throws -> PeerWait {
        let name = try shape.match(["fault", "time", "out", "at", "WAIT"])[0]
        let waiting = plays.other
        let allPeerWaits = Self.peerWaits(of: .payer) + Self.peerWaits(of: .till).filter { $0 != .peerHello }
        guard let wait = allPeerWaits.first(where: { $0.rawValue == name }) else {
            let names = allPeerWaits.map(\.rawValue).joined(separator: ", ")
            throw error(.unknownName, line: shape.line, "\"\(name)\" is not a wait on the other side (\(names))")
        }
        guard Self.peerWaits(of: waiting).contains(wait) else {
            throw error(
                .wrongSide, line: shape.line,
                "\"time out at \(name)\" needs \"plays \(plays.other)\" (only the \(plays) waits for it; the \(waiting) "
                    + "waits at \(Self.peerWaits(of: waiting).map(\.rawValue).joined(separator: ", ")))")
        }
        return wait
    }

    /// `token removed this|other at STEP`: the side named must be one that takes the step.
    private func tokenRemoved(_ shape: Shape, plays: RehearsalSide) throws -> RehearsalFault {
        let slots = try shape.match(["fault", "token", "removed", "PARTY", "at", "STEP"])
        guard let party = RehearsalParty(rawValue: slots[0]), let step = RehearsalStep(rawValue: slots[1]) else {
            throw error(
                .malformed, line: shape.line,
                "expected \"fault token removed this|other at measure|debit|credit|receipt\", found "
                    + "\"\(shape.words.joined(separator: " "))\"")
        }
        let side = party.side(whenFilePlays: plays)
        if let stepSide = step.side, stepSide != side {
            throw error(
                .wrongSide, line: shape.line,
                "\"\(party.rawValue)\" is the \(side) in a file that plays the \(plays), and only the \(stepSide) "
                    + "takes the \(step.rawValue) step")
        }
        return .tokenRemoved(party, at: step)
    }
}

/// One directive line's words, with the checks its parts share: shape, durations, distances, amounts.
private struct Shape {
    let words: [String]
    let usage: String
    let line: Int
    let fileName: String

    func refusal(_ code: RehearsalFileErrorCode, _ message: String) -> RehearsalFileError {
        RehearsalFileError(code, fileName: fileName, line: line, message)
    }

    func malformed() -> RehearsalFileError {
        refusal(.malformed, "expected \"\(usage)\", found \"\(words.joined(separator: " "))\"")
    }

    /// Matches the words against a pattern of literal words and UPPER-CASE slots; returns the slots' words.
    /// Too few words or another literal is malformed; more words than the pattern are unknown trailing words.
    func match(_ pattern: [String]) throws -> [String] {
        var slots: [String] = []
        for (index, expected) in pattern.enumerated() {
            guard index < words.count else { throw malformed() }
            if expected.uppercased() == expected {
                slots.append(words[index])
            } else if words[index] != expected {
                throw malformed()
            }
        }
        guard words.count == pattern.count else {
            let known = words[..<pattern.count].joined(separator: " ")
            let extra = words[pattern.count...].joined(separator: " ")
            throw refusal(.unexpectedWords, "unknown words after \"\(known)\": \"\(extra)\"")
        }
        return slots
    }

    func money(_ text: String) throws -> Money {
        do {
            return try MoneyText.parse(text)
        } catch let error as MoneyError {
            throw refusal(.invalidValue, "\(words[0]): \(error.message)")
        }
    }

    func category(_ text: String) throws -> String {
        do {
            try Budget.validateCategory(text)
            return text
        } catch let error as BudgetError {
            throw refusal(.invalidValue, "\(words[0]): \(error.message)")
        }
    }

    /// `1*DIGIT ("ms" | "s")`, at most an hour.
    func duration(_ word: String) throws -> Int64 {
        let (value, unit) = NumberWord(word).split
        let hint = "write whole ms or s, as in 1500ms or 2s"
        switch unit {
        case "" where value.fraction.isEmpty && !value.whole.isEmpty:
            throw refusal(.needsUnit, "\"\(word)\" needs a unit: ms or s")
        case "ms", "s", "min":
            let factor: Int64 = unit == "ms" ? 1 : unit == "s" ? 1000 : 60_000
            guard value.whole.count <= NumberWord.digitCountMax else {
                throw refusal(.outOfRange, "\"\(word)\" is a duration over 3600 s")
            }
            guard let milliseconds = value.scaled(by: factor) else {
                throw refusal(.wrongUnit, "\"\(word)\" is not a duration (\(hint))")
            }
            guard milliseconds <= RehearsalFile.durationMillisecondsMax else {
                throw refusal(.outOfRange, "\"\(word)\" is a duration over 3600 s")
            }
            guard unit == "ms" || (unit == "s" && value.fraction.isEmpty) else {
                let better = milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
                throw refusal(.wrongUnit, "\"\(word)\" is not a duration (write \(better))")
            }
            return milliseconds
        default: throw refusal(.wrongUnit, "\"\(word)\" is not a duration (\(hint))")
        }
    }

    /// `1*DIGIT "mm"`, at most `RehearsalFile.millimetresMax`; metres and centimetres get the reading in mm.
    func millimetres(_ word: String) throws -> UInt32 {
        let (value, unit) = NumberWord(word).split
        switch unit {
        case "" where value.fraction.isEmpty && !value.whole.isEmpty:
            throw refusal(.needsUnit, "\"\(word)\" needs a unit: mm")
        case "mm", "cm", "m":
            let factor: Int64 = unit == "mm" ? 1 : unit == "cm" ? 10 : 1000
            guard value.whole.count <= NumberWord.digitCountMax else {
                throw refusal(.outOfRange, "\"\(word)\" is over \(RehearsalFile.millimetresMax) mm (100 m)")
            }
            guard let millimetres = value.scaled(by: factor) else {
                throw refusal(.wrongUnit, "\"\(word)\" is not millimetres (write a whole number, as in 400mm)")
            }
            guard millimetres <= Int64(RehearsalFile.millimetresMax) else {
                throw refusal(
                    .outOfRange, "\"\(word)\" is over \(RehearsalFile.millimetresMax) mm (100 m)")
            }
            guard unit == "mm" && value.fraction.isEmpty else {
                throw refusal(.wrongUnit, "\"\(word)\" is not millimetres (write \(millimetres)mm)")
            }
            return UInt32(millimetres)
        default:
            throw refusal(.wrongUnit, "\"\(word)\" is not millimetres (write a whole number, as in 400mm)")
        }
    }

    /// ENTRY of `pin … from ENTRY`: 1 … `RehearsalFile.pinEntryNumberMax`.
    func pinEntry(_ word: String) throws -> Int {
        let (value, unit) = NumberWord(word).split
        guard unit.isEmpty, value.fraction.isEmpty, let number = value.scaled(by: 1), number >= 1,
            number <= Int64(RehearsalFile.pinEntryNumberMax)
        else {
            throw refusal(
                .outOfRange, "\"\(word)\" is not a PIN entry number (1 to \(RehearsalFile.pinEntryNumberMax))")
        }
        return Int(number)
    }

    /// N of `drop after N` / `cancel after N`: 1 … 64.
    func messageNumber(_ word: String) throws -> Int {
        let (value, unit) = NumberWord(word).split
        guard unit.isEmpty, value.fraction.isEmpty, let number = value.scaled(by: 1), number >= 1,
            number <= Int64(RehearsalFile.messageNumberMax)
        else {
            throw refusal(
                .outOfRange, "\"\(word)\" is not a message number (1 to \(RehearsalFile.messageNumberMax))")
        }
        return Int(number)
    }
}

/// A word such as "1500ms", "1.5m" or "60": its decimal number and the unit that follows it.
private struct NumberWord {
    /// Digits read at most: 12 digits times a factor of 60,000 stay far inside Int64.
    static let digitCountMax = 12

    /// Digits before the point, and after it (empty without a point).
    struct Value {
        let whole: [UInt8]
        let fraction: [UInt8]
        let hasPoint: Bool

        /// The number times `factor`, when that is a whole number that fits (at most 12 digits are read, so
        /// nothing overflows); nil otherwise.
        func scaled(by factor: Int64) -> Int64? {
            guard !whole.isEmpty, !hasPoint || !fraction.isEmpty,
                whole.count + fraction.count <= NumberWord.digitCountMax
            else {
                return nil
            }
            var numerator: Int64 = 0
            for digit in whole + fraction { numerator = numerator * 10 + Int64(digit - UInt8(ascii: "0")) }
            var denominator: Int64 = 1
            for _ in fraction { denominator *= 10 }
            let (product, overflow) = numerator.multipliedReportingOverflow(by: factor)
            guard !overflow, product % denominator == 0 else { return nil }
            return product / denominator
        }
    }

    let split: (value: Value, unit: String)

    init(_ word: String) {
        let bytes = Array(word.utf8)
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let whole = Array(bytes.prefix(while: isDigit))
        var rest = bytes[whole.count...]
        let hasPoint = rest.first == UInt8(ascii: ".")
        var fraction: [UInt8] = []
        if hasPoint {
            rest = rest.dropFirst()
            fraction = Array(rest.prefix(while: isDigit))
            rest = rest.dropFirst(fraction.count)
        }
        split = (Value(whole: whole, fraction: fraction, hasPoint: hasPoint), String(decoding: rest, as: UTF8.self))
    }
}
