import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
@_spi(Benchmark) import SecureToken
import Testing

@testable import SecureBench

/// The benchmark module's own parts: its C baselines on a real SoftHSM token, its fixture history, and
/// the `secure-bench` command line. Timing goals are not tested here; the benchmarks print them.
@Suite("SecureBench", .serialized)
struct BenchTests {
    /// The append baseline finds, creates and destroys the same object SecureToken's `replaceDataObject`
    /// would: its second round finds the first round's object (two C_FindObjects) and destroys it, so the
    /// round makes the 9 calls an append makes (sign with its login, then the anchor's replacement).
    @Test func rawLoopsRunOnATokenSession() throws {
        let fresh = try TestTokens.fresh("bench-raw")
        let session = try fresh.session()
        defer { session.close() }
        let key = try session.generateKey(label: "bench-raw", usage: .sign)
        let digest = SHA256.hash(Array("bench".utf8))
        #expect(try RawSignLoop.run(session: session, key: key, digest: digest, count: 3) > 0)
        let first = try RawAppendLoop.run(
            session: session, key: key, digest: digest, application: "secure-bench-test",
            label: "raw", value: [1, 2, 3], count: 1)
        #expect(first.calls == 7) // nothing to find or destroy yet
        let second = try RawAppendLoop.run(
            session: session, key: key, digest: digest, application: "secure-bench-test",
            label: "raw", value: [4, 5, 6], count: 1)
        #expect(second.calls == 9)
        #expect(try session.dataObjects(application: "secure-bench-test").map(\.value) == [[4, 5, 6]])
    }

    /// What a C loop returns other than CKR_OK is thrown by the raw accessor with its C name.
    @Test func rawLoopFailureIsThrownWithItsCName() throws {
        let fresh = try TestTokens.fresh("bench-raw-fail")
        let session = try fresh.session()
        defer { session.close() }
        let key = try session.generateKey(label: "bench-raw-fail", usage: .sign)
        var ran = false
        let error = #expect(throws: TokenError.self) {
            try session.withRawSigningSession(key: key, function: "test loop") { raw in
                ran = raw.pinByteCount > 0 && raw.key != 0
                return 0xa0 // CKR_PIN_INCORRECT
            }
        }
        #expect(ran)
        #expect(error?.returnValueName == "CKR_PIN_INCORRECT")
        try session.withRawSigningSession(key: key, function: "test loop") { _ in 0 } // CKR_OK throws nothing
    }

    /// The history is reproducible from its seed (amounts, payees, categories, notes) and puts a deposit
    /// at its first position and every `depositInterval` after it.
    @Test func syntheticHistoryIsSeededAndDepositsFirst() throws {
        let issuer = try SoftwareSigner(), payer = try SoftwareSigner()
        let walletID = WalletID(bytes: SHA256.hash(Array("bench-wallet".utf8)))!
        func drafts(seed: UInt64) throws -> [EntryDraft] {
            var history = SyntheticHistory(walletID: walletID, payerKey: payer.publicKey, issuer: issuer, seed: seed)
            return try history.drafts(from: SyntheticHistory.firstPosition, count: 20)
        }
        let one = try drafts(seed: 7), again = try drafts(seed: 7), other = try drafts(seed: 8)
        #expect(one.map(\.kind) == [.deposit] + [EntryKind](repeating: .paymentOut, count: 19))
        func shape(_ drafts: [EntryDraft]) -> [String] {
            drafts.map { "\(String(describing: $0.amount)) \($0.category)" }
        }
        #expect(shape(one) == shape(again))
        #expect(shape(one) != shape(other))
    }

    @Test func commandLine() throws {
        let bench = Run.productsDirectory + "/secure-bench"
        let help = try Run.program(bench, ["--help"])
        #expect(help.status == 0)
        for name in ["sign", "kem", "channel", "pay", "ledger", "till"] {
            #expect(help.output.contains("secure-bench \(name)"))
        }
        let unknown = try Run.program(bench, ["frobnicate"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown benchmark \"frobnicate\""))
        let badOption = try Run.program(bench, ["sign", "--colour"])
        #expect(badOption.status == 2 && badOption.stderr.contains("unknown option --colour"))
        let badFixture = try Run.program(bench, ["fixtures", "verify"])
        #expect(badFixture.status == 2)
        // The wallet's own binary has no benchmarks any more.
        let secure = try Run.program(Run.secure, ["bench", "sign"])
        #expect(secure.status == 2 && secure.stderr.contains("unknown command \"bench\""))
    }

    /// `secure-bench till --quick --json` with two runs and one first contact: the JSON's shape, positive
    /// figures, both sessions ending as declined at the amount, and the key-event logs followed exactly in
    /// the sessions that need them. The D-Bus system bus points at a socket that does not exist, so the Avahi
    /// part takes its skip path at once (scripts/lan gives it a daemon for the figures in PERFORMANCE.md).
    @Test func tillQuickJSON() throws {
        let bench = Run.productsDirectory + "/secure-bench"
        let noBus = FileManager.default.temporaryDirectory.appendingPathComponent("no-bus-\(UUID().uuidString)").path
        let run = try Run.program(
            bench, ["till", "--quick", "--json", "--runs", "2", "--first-contact-runs", "1"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + noBus])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        let json = try #require(object, "not a JSON object: \(run.output)")
        #expect(json["benchmark"] as? String == "till" && json["runs"] as? Int == 2)
        #expect(json["allAsExpected"] as? Bool == true, "unexpected: \(json["unexpected"] ?? "")")
        #expect((json["loadAverage"] as? String)?.isEmpty == false)
        #expect((json["requestRecordBytes"] as? Int ?? 0) > 0)
        func positive(_ figures: Any?, _ what: String) {
            let pair = figures as? [String: Double]
            #expect((pair?["medianMilliseconds"] ?? 0) > 0 && (pair?["p90Milliseconds"] ?? 0) > 0, "\(what)")
        }
        positive(json["baseline"], "baseline")
        let known = json["knownPayer"] as? [String: Any], first = json["firstContact"] as? [String: Any]
        positive(known?["connectToAmount"], "known payer")
        positive(first?["connectToAmount"], "first contact")
        #expect((known?["ratio"] as? Double ?? 0) > 0 && (first?["ratio"] as? Double ?? 0) > 0)
        #expect(known?["goalMax"] as? Double == 1.3 && first?["runs"] as? Int == 1)
        #expect(known?["tokenOperations"] as? Int == 0)
        // Each side follows the other's log in its first session only.
        #expect(json["firstSessionKeyEventLogsFollowed"] as? [String: Int] == ["payer": 1, "till": 1])
        #expect(known?["keyEventLogsFollowed"] as? [String: Int] == ["payer": 0, "till": 0])
        #expect(first?["keyEventLogsFollowed"] as? [String: Int] == ["payer": 1, "till": 1])
        let avahi = json["avahi"] as? [String: Any]
        #expect(avahi?["skipped"] as? Bool == true && (avahi?["reason"] as? String)?.isEmpty == false)
    }
}
