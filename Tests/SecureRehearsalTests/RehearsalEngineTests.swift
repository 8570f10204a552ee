import Foundation
import SecureCore
import SecureCrypto
import SecureRehearsal
import SecureTestSupport
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

/// The rehearsal signature domain (docs/PROTOCOL.md, "Signature labels": secure-rehearsal-v1).
@Suite("rehearsal signature domain")
struct SignatureDomainTests {
    @Test func aRehearsalSignatureVerifiesOnlyInsideTheDomain() throws {
        let payload = Array("a transfer".utf8)
        let label = SignatureLabel("secure-transfer-v1")
        let (key, signature) = try SignatureDomain.rehearsal {
            let key = try RehearsalKey()
            return (key, try key.sign(digest: label.digest(of: payload)))
        }
        #expect(SignatureDomain.rehearsal { label.verify(signature, of: payload, by: key.publicKey) })
        #expect(!SignatureDomain.isRehearsal)
        #expect(!label.verify(signature, of: payload, by: key.publicKey))
        // The domain's digest is SHA-256("secure-rehearsal-v1" 0x00 ‖ label 0x00 ‖ payload).
        let expected = SHA256.hash(Array("secure-rehearsal-v1\0secure-transfer-v1\0".utf8) + payload)
        #expect(SignatureDomain.rehearsal { label.digest(of: payload) } == expected)
        #expect(label.digest(of: payload) == SHA256.hash(Array("secure-transfer-v1\0".utf8) + payload))
    }

    @Test func aRealSignatureDoesNotVerifyInsideTheDomain() throws {
        let payload = Array("a receipt".utf8)
        let label = SignatureLabel("secure-receipt-v1")
        let signer = try SoftwareSigner()
        let signature = try signer.sign(payload, label: label)
        #expect(label.verify(signature, of: payload, by: signer.publicKey))
        #expect(!SignatureDomain.rehearsal { label.verify(signature, of: payload, by: signer.publicKey) })
    }

    @Test func theDomainDoesNotFollowAnotherThread() throws {
        final class Box: @unchecked Sendable { var inside = true }
        let box = Box()
        SignatureDomain.rehearsal {
            let done = DispatchSemaphore(value: 0)
            Thread {
                box.inside = SignatureDomain.isRehearsal
                done.signal()
            }.start()
            done.wait()
        }
        #expect(!box.inside)
    }
}

/// The rehearsal wallets' folder: private, on tmpfs, gone afterwards.
@Suite("rehearsal world")
struct RehearsalWorldTests {
    @Test func walletsLiveInAPrivateTmpfsFolderRemovedAfterwards() throws {
        let directory = try SignatureDomain.rehearsal { () throws -> String in
            let world = try RehearsalWorld(settings: RehearsalSettings(plays: .payer, ending: "paid"))
            var info = stat()
            #expect(stat(world.directory, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o700)
            #expect(
                world.directory.hasPrefix("/dev/shm/")
                    || world.directory.hasPrefix(ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/dev/shm/"))
            #expect(world.payer.balance(world.asset) == (try Money(minorUnits: 2_000, currency: .eur)))
            world.remove()
            return world.directory
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func aFolderThatIsNotTmpfsIsRefused() throws {
        #expect(throws: RehearsalError.self) {
            try SignatureDomain.rehearsal {
                _ = try RehearsalWorld(
                    settings: RehearsalSettings(plays: .payer, ending: "paid"),
                    environment: ["XDG_RUNTIME_DIR": Run.projectRoot], fallback: nil)
            }
        }
    }
}
