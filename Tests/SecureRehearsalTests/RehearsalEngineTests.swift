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

    /// A rehearsal file from its directives, after `rehearsal 1` and the `plays` line.
    static func file(plays: String, _ directives: String) throws -> RehearsalFile {
        try RehearsalFile.parse(Array("rehearsal 1\nplays \(plays)\n\(directives)\n".utf8), name: "test")
    }

    static func play(_ file: RehearsalFile) throws -> (RehearsalResult, [RehearsalEvent]) {
        var events: [RehearsalEvent] = []
        let result = try Rehearsal(file: file, person: YesPerson()) { events.append($0) }.run()
        return (result, events)
    }

    @Test func paidPlayingThePayer() throws {
        let file = try Self.file(
            plays: "payer", "ending paid\nconnect after 3s\ndecide confirm after 2s\ndistance other 410mm")
        let start = Date()
        let (result, events) = try Self.play(file)
        #expect(result.ending == "paid", "\(events.map(\.text))")
        #expect(result.after.payer.money == Self.euros(1_550))
        #expect(result.after.till.money == Self.euros(450))
        #expect(result.conserved)
        // The countdown's 3 s and the decision's 2 s passed on the rehearsal clock, not the wall's.
        #expect(events.last!.elapsedMilliseconds >= 3_000)
        #expect(Date().timeIntervalSince(start) < 3)
    }

    @Test func aSixtySecondCountdownExpiresInAMoment() throws {
        let (result, events) = try Self.play(try Self.file(plays: "payer", "ending expired\nconnect never"))
        #expect(result.ending == "expired")
        #expect(events.last!.elapsedMilliseconds == 60_000)
        #expect(result.retryOutcome == nil && result.conserved)
    }

    @Test func anUnresolvedEndingIsSettledByTheRetry() throws {
        let (result, _) = try Self.play(try Self.file(plays: "till", "ending unconfirmed\nfault drop after 8"))
        #expect(result.ending == "unconfirmed")
        guard case .unconfirmed? = result.payerOutcome, case .paid? = result.retryOutcome else {
            Issue.record(
                "payer \(String(describing: result.payerOutcome)), retry \(String(describing: result.retryOutcome))")
            return
        }
        #expect(result.after.payer.money == Self.euros(1_550) && result.after.till.money == Self.euros(450))
    }

    @Test func theWrongPINIsRefusedByTheRehearsalToken() throws {
        final class Typist: RehearsalPerson {
            func confirm(_ question: String) -> Bool { true }
            func readPIN(_ prompt: String) throws -> PIN { try PIN("1234") }
        }
        let file = try Self.file(plays: "till", "ending pin-refused")
        let result = try Rehearsal(file: file, person: Typist()) { _ in }.run()
        #expect(result.ending == "pin-refused")
        #expect(result.after.payer.money == Self.euros(2_000))
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
            let world = try RehearsalWorld(file: try RehearsalEngineTests.file(plays: "payer", "ending paid"))
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
                    file: try RehearsalEngineTests.file(plays: "payer", "ending paid"),
                    environment: ["XDG_RUNTIME_DIR": Run.projectRoot], fallback: nil)
            }
        }
    }
}
