import Foundation
import SecureCore
import SecureCrypto
import SecureRehearsal
import SecureToken
import Testing

/// This side's person with `--yes`: confirms, and types the rehearsal PIN.
final class YesPerson: RehearsalPerson {
    var questions: [String] = []
    func confirm(_ question: String) -> Bool {
        questions.append(question)
        return true
    }
    func readPIN(_ prompt: String) throws -> PIN { try PIN(RehearsalToken.pin) }
}

/// The engine driven from code, one settings value per ending it plays on today's machines.
@Suite("rehearsal engine")
struct RehearsalEngineTests {
    static func euros(_ minorUnits: Int64) -> Money { try! Money(minorUnits: minorUnits, currency: .eur) }

    static func play(_ settings: RehearsalSettings) throws -> (RehearsalResult, [RehearsalEvent]) {
        var events: [RehearsalEvent] = []
        let result = try Rehearsal(settings: settings, person: YesPerson()) { events.append($0) }.run()
        return (result, events)
    }

    static func check(_ settings: RehearsalSettings, _ comment: Comment? = nil) throws {
        let (result, events) = try play(settings)
        let story = events.map { "\($0.side?.rawValue ?? "-") \($0.name): \($0.text)" }.joined(separator: "\n")
        #expect(result.ending == settings.ending, "\(comment?.rawValue ?? "")\n\(story)")
        #expect(result.conserved, "money not conserved\n\(story)")
    }

    @Test func paidPlayingThePayer() throws {
        var settings = RehearsalSettings(plays: .payer, ending: "paid")
        settings.connectAfterMilliseconds = 3_000
        settings.decideAfterMilliseconds = 2_000
        settings.distanceOther = [410]
        let start = Date()
        let (result, events) = try Self.play(settings)
        #expect(result.ending == "paid", "\(events.map(\.text))")
        #expect(result.after.payer.money == Self.euros(1_550))
        #expect(result.after.till.money == Self.euros(450))
        #expect(Date().timeIntervalSince(start) < 10)
    }
}
