import Foundation
import SecureCrypto
import Testing

@testable import SecureCore

/// Rehearsal settings files (docs/TILL.md §4.2): the shipped `rehearsals/` folder matches §4.3's table (read
/// from the document itself), every error §4.2 lists is refused with its message and line, the defaults are
/// §4.2's, and hostile bytes end in a `RehearsalFileError`, never a trap.
@Suite("Rehearsal files")
struct RehearsalFileTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let folder = repositoryRoot.appendingPathComponent("rehearsals")

    /// One row of §4.3's table: file, plays, ending, and the lines the file must hold (the quoted pieces of
    /// "other lines" that hold a space: a lone quoted word there is a name in a note, not a line).
    struct Row {
        let file: String
        let plays: String
        let ending: String
        let lines: [String]
    }

    /// §4.3's table, read from docs/TILL.md: the rows between the "### 4.3" heading and the next heading.
    static func tableRows() throws -> [Row] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/TILL.md"), encoding: .utf8)
        let section = text.components(separatedBy: "\n### 4.3")[1].components(separatedBy: "\n## ")[0]
        return section.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            return Row(
                file: backticked(cells[1])[0], plays: cells[2], ending: backticked(cells[3])[0],
                lines: backticked(cells[4]).filter { $0.contains(" ") })
        }
    }

    /// The `…`-quoted pieces of a table cell.
    static func backticked(_ cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }
            .map { String($0.element) }
    }

    static func read(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    // MARK: Shipped files

    @Test func everyShippedFileReachesItsTableRow() throws {
        let rows = try Self.tableRows()
        #expect(rows.count == 23)
        let shipped = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).sorted()
        #expect(shipped == (rows.map(\.file) + ["README.md"]).sorted())
        for row in rows {
            let bytes = try Self.read(row.file)
            let file = try RehearsalFile.parse(bytes, name: row.file)
            #expect(file.plays.rawValue == row.plays, "\(row.file)")
            #expect(file.ending.rawValue == row.ending, "\(row.file)")
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("# ") == true, "\(row.file) starts with its one-sentence comment")
            #expect(
                Array(lines.dropFirst().prefix(3)) == ["rehearsal 1", "plays \(row.plays)", "ending \(row.ending)"])
            for line in row.lines { #expect(lines.contains(line), "\(row.file) lacks \(line)") }
        }
        // Every ending name is in the table, and the table names no other.
        #expect(Set(rows.map(\.ending)) == Set(RehearsalEnding.allCases.map(\.rawValue)))
    }

    @Test func theExampleInTheDocumentIsTheShippedFile() throws {
        let text = try String(contentsOf: Self.repositoryRoot.appendingPathComponent("docs/TILL.md"), encoding: .utf8)
        let example = text.components(separatedBy: "`rehearsals/too-far.txt` in full:\n\n```\n")[1]
            .components(separatedBy: "```")[0]
        #expect(Array(example.utf8) == (try Self.read("too-far.txt")))
    }

    @Test func shippedFilesCarryTheirSettings() throws {
        let paid = try RehearsalFile.parse(try Self.read("paid.txt"), name: "paid.txt")
        #expect(paid.connect == .after(milliseconds: 3000))
        #expect(paid.decision == RehearsalDecision(answer: .confirm, afterMilliseconds: 2000))
        #expect(paid.distanceThis == [UInt32](repeating: 400, count: 16))
        #expect(paid.distanceOther == [UInt32](repeating: 410, count: 16))
        let budget = try RehearsalFile.parse(try Self.read("refused-budget.txt"), name: "b")
        #expect(
            budget.budget
                == RehearsalBudget(category: "groceries", limit: try MoneyText.parse("2.00 EUR"), isHardCap: true))
        #expect(budget.category == "groceries")
        // The budget refuses the default amount: the file reaches its ending.
        #expect(budget.budget!.limit < budget.amount)
        let balance = try RehearsalFile.parse(try Self.read("refused-balance.txt"), name: "b")
        #expect(balance.balance < balance.amount)
        let pin = try RehearsalFile.parse(try Self.read("pin-wrong-till.txt"), name: "p")
        #expect(pin.pinThis == .wrong && pin.pinThisFromEntry == 2 && pin.countdownMilliseconds == 90_000)
        let faults: [(String, RehearsalFault)] = [
            ("withdrawn.txt", .cancelAfter(message: 5)), ("till-busy.txt", .busy),
            ("token-removed-at-credit.txt", .tokenRemoved(.other, at: .credit)),
            ("link-lost-after-debit.txt", .dropAfter(message: 8)), ("refused-after-debit.txt", .refuseTransfer),
            ("payee-failed-to-record.txt", .recordFails),
        ]
        for (name, fault) in faults {
            #expect(try RehearsalFile.parse(try Self.read(name), name: name).fault == fault, "\(name)")
        }
        let late = try RehearsalFile.parse(try Self.read("timeout-after-ready.txt"), name: "t")
        #expect(late.delays == [RehearsalDelay(message: .transfer, milliseconds: 20_000)])
    }

    // MARK: Defaults

    @Test func absentDirectivesTakeTheirDefaults() throws {
        let file = try RehearsalFile.parse(Array("rehearsal 1\nplays payer\nending paid\n".utf8), name: "d")
        #expect(file.plays == .payer && file.ending == .paid)
        #expect(file.amount == (try MoneyText.parse("4.50 EUR")))
        #expect(file.countdownMilliseconds == 60_000)
        #expect(file.balance == (try MoneyText.parse("20.00 EUR")))
        #expect(file.budget == nil)
        #expect(file.category == "till")
        #expect(file.connect == .after(milliseconds: 1000))
        #expect(file.decision == RehearsalDecision(answer: .confirm, afterMilliseconds: 1000))
        #expect(file.pinThis == .right && file.pinOther == .right)
        #expect(file.pinThisFromEntry == 1 && file.pinOtherFromEntry == 1)
        #expect(file.distanceThis == [UInt32](repeating: 400, count: 16))
        #expect(file.distanceOther == file.distanceThis)
        #expect(file.delays.isEmpty && file.fault == nil && file.expectPayee == nil && file.contact == nil)
    }

    @Test func everyDirectiveIsRead() throws {
        let text = """
            # a comment
            rehearsal 1    # the version
              plays   till
            ending too-far
            amount 12.5 EUR
            countdown 5500ms
            balance 3 JPY
            budget food 10.00 EUR soft
            category food
            pin this locked
            pin other wrong from 2
            distance this 900mm 1100mm 1000mm
            delay receipt 2s
            fault time out at receipt
            expect-payee till
            contact Corner   Shop
            """
        let file = try RehearsalFile.parse(Array(text.utf8), name: "all")
        #expect(file.plays == .till && file.ending == .tooFar)
        #expect(file.amount == (try MoneyText.parse("12.50 EUR")) && file.countdownMilliseconds == 5500)
        #expect(file.balance == (try MoneyText.parse("3 JPY")))
        #expect(
            file.budget == RehearsalBudget(category: "food", limit: try MoneyText.parse("10 EUR"), isHardCap: false))
        #expect(file.category == "food" && file.pinThis == .locked && file.pinThisFromEntry == 1)
        #expect(file.pinOther == .wrong && file.pinOtherFromEntry == 2)
        #expect(file.distanceThis == (0..<16).map { [900, 1100, 1000][$0 % 3] })
        #expect(file.delays == [RehearsalDelay(message: .receipt, milliseconds: 2000)])
        #expect(file.fault == .timeOutAt(.receipt) && file.expectPayee == .till && file.contact == "Corner Shop")
    }

    @Test func namesMatchTheProtocols() {
        let peerNames = Set(PeerMessage.bodyTypes.values.map { $0.messageName })
        for message in RehearsalMessage.allCases { #expect(peerNames.contains(message.rawValue), "\(message)") }
        #expect(RehearsalEnding.receiptUnrecorded.settled(on: .payer) == .unresolved)
        #expect(RehearsalEnding.receiptUnrecorded.settled(on: .till) == .final)
        #expect(RehearsalEnding.linkLostAfterReady.settled(on: .payer) == .final)
        #expect(RehearsalEnding.linkLostAfterReady.settled(on: .till) == .unresolved)
        #expect(RehearsalEnding.tillBusy.settled(on: .till) == nil)
        #expect(RehearsalEnding.paidRetry.settled(on: .payer) == .final)
    }

    // MARK: Errors

    static let till = "rehearsal 1\nplays till\n"
    static let payer = "rehearsal 1\nplays payer\n"

    /// Each error of §4.2 (and the side rules of §4.3) on a minimal bad file, with its exact text and line.
    static let errorCases: [(String, String)] = [
        ("", #"1: the first line must be "rehearsal 1""#),
        ("# only a comment\n\nrehearsl 1\n", #"3: the first line must be "rehearsal 1""#),
        (
            "rehearsal 2\n",
            #"1: the first line must be "rehearsal 1" (this build reads version 1; the file says "rehearsal 2")"#
        ),
        ("rehearsal 1\n", #"1: the second line must be "plays payer" or "plays till""#),
        ("rehearsal 1\nplays bank\n", #"2: the second line must be "plays payer" or "plays till""#),
        (
            till + "ending paid\nfrobnicate 3\n",
            #"4: unknown directive "frobnicate" (one of: ending, amount, countdown, balance, budget, category, "#
                + "connect, decide, pin, distance, delay, fault, expect-payee, contact)"
        ),
        (till + "ending paid\nending paid\n", #"4: "ending" given twice"#),
        (till + "pin this wrong\npin other wrong\npin this right\n", #"5: "pin this" given twice"#),
        (till + "delay receipt 1s\ndelay receipt 2s\n", #"4: "delay receipt" given twice"#),
        (till + "countdown 60\n", #"3: "60" needs a unit: ms or s"#),
        (till + "distance this 1.5m\n", #"3: "1.5m" is not millimetres (write 1500mm)"#),
        (till + "distance other 150cm\n", #"3: "150cm" is not millimetres (write 1500mm)"#),
        (till + "distance other 400\n", #"3: "400" needs a unit: mm"#),
        (till + "distance other 100001mm\n", #"3: "100001mm" is over 100000 mm (100 m)"#),
        (
            till + "distance this " + String(repeating: "1mm ", count: 17) + "\n",
            #"3: 17 readings; "distance" takes at most 16"#
        ),
        (till + "countdown 3601s\n", #"3: "3601s" is a duration over 3600 s"#),
        (till + "delay ready 99999999999999999999ms\n", #"3: "99999999999999999999ms" is a duration over 3600 s"#),
        (till + "countdown 4999ms\n", #"3: a countdown of "4999ms" is under 5 s, the shortest"#),
        (payer + "decide confirm after 1.5s\n", #"3: "1.5s" is not a duration (write 1500ms)"#),
        (payer + "connect after 2min\n", #"3: "2min" is not a duration (write 120s)"#),
        (payer + "connect after soon\n", #"3: "soon" is not a duration (write whole ms or s, as in 1500ms or 2s)"#),
        (
            till + "delay transfx 1s\n",
            #"3: "transfx" is not a message name (hello, request, offer, reply, measurement, ready, transfer, "#
                + "receipt, refusal, failure)"
        ),
        (till + "fault busy\nfault record fails\n", #"4: "fault" given twice: a rehearsal plays one fault"#),
        (payer + "fault busy\n", #"3: "busy" needs "plays till""#),
        (payer + "fault record fails\n", #"3: "record fails" needs "plays till""#),
        (payer + "fault refuse transfer\n", #"3: "refuse transfer" needs "plays till""#),
        (payer + "expect-payee other\n", #"3: "expect-payee" needs "plays till""#),
        (till + "connect after 1s\n", #"3: "connect" needs "plays payer""#),
        (till + "decide decline after 1s\n", #"3: "decide" needs "plays payer""#),
        (till + "fault decline\n", #"3: "decline" needs "plays payer""#),
        (
            payer + "delay request 1s\n",
            #"3: "delay request" needs "plays till" (the played side delays what it sends, and only the till "#
                + "sends request)"
        ),
        (
            till + "fault time out at offer\n",
            #"3: "time out at offer" needs "plays payer" (only the till waits for it; the payer waits at "#
                + "peerHello, request, reply, ready, receipt)"
        ),
        (
            till + "fault time out at debit\n",
            #"3: "debit" is not a wait on the other side (peerHello, request, reply, ready, receipt, offer, "#
                + "peerMeasurement, transfer)"
        ),
        (
            till + "fault token removed this at credit\n",
            #"3: "this" is the payer in a file that plays the till, and only the till takes the credit step"#
        ),
        (
            payer + "fault token removed other at credit\n",
            #"3: "other" is the payer in a file that plays the payer, and only the till takes the credit step"#
        ),
        (till + "fault drop after 65\n", #"3: "65" is not a message number (1 to 64)"#),
        (till + "fault cancel after 0\n", #"3: "0" is not a message number (1 to 64)"#),
        (
            till + "fault explode\n",
            #"3: "fault explode" is not a fault (one of: drop after N, decline, time out at WAIT, cancel after N, "#
                + "busy, token removed this|other at STEP, record fails, refuse transfer)"
        ),
        (
            payer + "decide confirm after 1s\nfault decline\n",
            #"4: "fault decline" and "decide" both say what the payer decides; keep one ("fault decline" is "decide decline after 0s")"#
        ),
        (
            payer + "decide maybe after 1s\n",
            #"3: expected "decide confirm|decline after DURATION", found "decide maybe after 1s""#
        ),
        (payer + "decide confirm\n", #"3: expected "decide confirm|decline after DURATION", found "decide confirm""#),
        (till + "pin this right from 2\n", #"3: "from" goes with wrong or locked: earlier entries are right"#),
        (till + "pin this wrong from 9\n", #"3: "9" is not a PIN entry number (1 to 8)"#),
        (till + "amount 4.50 EUR extra words\n", #"3: unknown words after "amount 4.50 EUR": "extra words""#),
        (till + "fault busy now\n", #"3: unknown words after "fault busy": "now""#),
        (till + "amount 0.00 EUR\n", #"3: a till's amount must be more than zero"#),
        (
            till + "amount 4,50 EUR\n",
            #"3: amount: "4,50 EUR": digit grouping is not accepted and the decimal separator is '.'; write it as in 4.50 EUR"#
        ),
        (
            till + "ending paid\nending payed\n",
            #"4: "payed" is not an ending (one of: "# + RehearsalEnding.allCases.map(\.rawValue).joined(separator: ", ")
                + ")"
        ),
        (
            till + "contact 1234abcd\n",
            #"3: a contact name cannot look like a wallet id or key fingerprint: "1234abcd""#
        ),
        (
            till + "category " + String(repeating: "c", count: 65) + "\n",
            #"3: category: a category name is 1 to 64 bytes; ""# + String(repeating: "c", count: 65) + #"" has 65"#
        ),
        (till + "amount 4.50 EUR\n", #"3: no "ending" line"#),
        (
            till + "ending paid\tnow\n",
            #"3: a control or invisible character (U+0009) in the line; separate words with spaces"#
        ),
        (
            till + "ending paid\0\n",
            #"3: a control or invisible character (U+0000) in the line; separate words with spaces"#
        ),
        (
            till + "ending paid\r\r\n",
            #"3: a control or invisible character (U+000D) in the line; separate words with spaces"#
        ),
        (
            "\u{FEFF}rehearsal 1\n",
            #"1: a control or invisible character (U+FEFF) in the line; separate words with spaces"#
        ),
        (till + String(repeating: "#", count: 201) + "\n", #"3: line longer than 200 bytes"#),
    ]

    @Test func everyErrorNamesItsLine() {
        for (text, expected) in Self.errorCases {
            #expect(Self.failure(Array(text.utf8)) == "bad.txt:" + expected, "\(text.debugDescription)")
        }
        #expect(Self.failure(Array((Self.till + "ending paid\n").utf8) + [0xC3, 0x28, 0x0A]) == "bad.txt:4: not UTF-8")
        #expect(Self.failure(Array(Self.till.utf8) + [0x23, 0xFF]) == "bad.txt:3: not UTF-8", "a comment is UTF-8 too")
    }

    /// The codes' texts are named in docs/TILL.md §4.2's error table: pinned here.
    @Test func errorCodesKeepTheirTexts() {
        #expect(
            RehearsalFileErrorCode.allCases.map(\.rawValue) == [
                "first-line", "second-line", "unknown-directive", "given-twice", "malformed", "unexpected-words",
                "needs-unit", "wrong-unit", "out-of-range", "invalid-value", "unknown-name", "wrong-side", "conflict",
                "no-ending", "line-too-long", "too-many-lines", "not-utf8", "control-character",
            ])
        #expect(RehearsalFileErrorCode.allCases.allSatisfy { $0.kind == .usage })
    }

    /// The error's description, or nil when the file parsed; any other error type fails the test.
    static func failure(_ bytes: [UInt8]) -> String? {
        do {
            _ = try RehearsalFile.parse(bytes, name: "bad.txt")
            return nil
        } catch let error as RehearsalFileError {
            #expect(error.kind == .usage)
            #expect(error.description == "\(error.fileName):\(error.line): \(error.message)")
            return error.description
        } catch {
            Issue.record("not a RehearsalFileError: \(error)")
            return "\(error)"
        }
    }

    // MARK: Hostile input

    @Test func hostileInputIsRefusedAtItsLine() throws {
        let paid = Array((Self.payer + "ending paid\n").utf8)
        // NUL bytes anywhere, a 10 kB line, 300 lines, 10 MB with no line end.
        #expect(
            Self.failure([0, 0, 0])
                == "bad.txt:1: a control or invisible character (U+0000) in the line; separate words with spaces")
        #expect(Self.failure(paid + [UInt8](repeating: 0x61, count: 10_000)) == "bad.txt:4: line longer than 200 bytes")
        let comments = Array(String(repeating: "# note\n", count: 300).utf8)
        #expect(Self.failure(paid + comments) == "bad.txt:201: more than 200 lines")
        #expect(Self.failure([UInt8](repeating: 0x20, count: 10_000_000)) == "bad.txt:1: line longer than 200 bytes")
        // 200 lines of 200 bytes are the most a file holds, and parse.
        let full = paid + Array(String(repeating: "#" + String(repeating: "x", count: 199) + "\r\n", count: 197).utf8)
        #expect(full.count <= RehearsalFile.byteCountMax)
        #expect(try RehearsalFile.parse(full, name: "full").ending == .paid)
    }

    @Test func crlfLineEndsAreAccepted() throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.folder.path) where name.hasSuffix(".txt") {
            let bytes = try Self.read(name)
            let crlf = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
            #expect(try RehearsalFile.parse(crlf, name: name) == RehearsalFile.parse(bytes, name: name), "\(name)")
            // No final line end at all parses the same too.
            #expect(
                try RehearsalFile.parse(Array(bytes.dropLast()), name: name) == RehearsalFile.parse(bytes, name: name))
        }
    }

    /// Every truncation of every shipped file, and seeded byte flips of each, parse or throw a
    /// RehearsalFileError: never a trap, never another error (FuzzDecoders' `rehearsalFile` goes further).
    @Test func truncationsAndFlipsNeverTrap() throws {
        var random = SeededRandom(seed: 18)
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.folder.path) where name.hasSuffix(".txt") {
            let bytes = try Self.read(name)
            for length in 0...bytes.count { _ = Self.failure(Array(bytes.prefix(length))) }
            for _ in 0..<200 {
                var flipped = bytes
                flipped[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                _ = Self.failure(flipped)
            }
        }
    }
}
