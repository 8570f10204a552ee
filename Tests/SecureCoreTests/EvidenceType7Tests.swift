import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// Evidence type 7, replay mismatch (docs/CLEARING.md §2.5): the six vectors stored under
/// Vectors/evidence-type7/ (made once by `writeVectors`, since ECDSA signatures are randomized) decode and give
/// their expected verdicts here and in the independent oracle scripts/oracles/verify_evidence7.py; the bytes
/// are pinned by SHA-256 in the manifest.
@Suite("Evidence type 7: replay mismatch")
struct EvidenceType7Tests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let directory = repositoryRoot.appendingPathComponent("Tests/SecureCoreTests/Vectors/evidence-type7")
    static let python = repositoryRoot.appendingPathComponent(".venv/bin/python").path
    static let oracle = repositoryRoot.appendingPathComponent("scripts/oracles/verify_evidence7.py").path

    /// One manifest line: name, "proven" or "not-proven", the code, SHA-256 of the file.
    struct Vector {
        let name: String
        let proven: Bool
        let code: String
        let sha256: String
    }

    static func manifest() throws -> [Vector] {
        let text = try String(contentsOf: directory.appendingPathComponent("MANIFEST"), encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let parts = line.split(separator: " ").map(String.init)
            return Vector(name: parts[0], proven: parts[1] == "proven", code: parts[2], sha256: parts[3])
        }
    }

    /// The verdict's code: the not-proven reason's, or the finding a proven sentence starts with.
    static func code(_ verdict: ForkVerdict) -> String {
        switch verdict {
        case .forkProven(let sentence): String(sentence.prefix { $0 != ":" })
        case .notProven(let reason, _): reason.rawValue
        }
    }

    @Test("the stored vectors give their verdicts, and their bytes are pinned")
    func storedVectors() throws {
        let vectors = try Self.manifest()
        #expect(vectors.map(\.name).sorted() == Self.names.sorted())
        for vector in vectors {
            let bytes = Array(try Data(contentsOf: Self.directory.appendingPathComponent(vector.name + ".bin")))
            #expect(Hex.encode(SHA256.hash(bytes)) == vector.sha256, "\(vector.name): SHA-256")
            let evidence = try #require(try ForkEvidence.decode(bytes), "\(vector.name)")
            guard case .replayMismatch = evidence.kind else {
                Issue.record("\(vector.name) is not type 7")
                continue
            }
            #expect(evidence.encoded == bytes, "\(vector.name): re-encoding")
            let verdict = evidence.verify()
            #expect(verdict.isProven == vector.proven, "\(vector.name): \(verdict)")
            #expect(Self.code(verdict) == vector.code, "\(vector.name): \(verdict)")
        }
    }

    @Test("the independent oracle gives the same verdicts")
    func oracleAgrees() throws {
        for vector in try Self.manifest() {
            let file = Self.directory.appendingPathComponent(vector.name + ".bin").path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.python)
            process.arguments = [Self.oracle, file]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let expected = (vector.proven ? "proven " : "not-proven ") + vector.code
            #expect(text.hasPrefix(expected), "\(vector.name): the oracle says \(text)")
            #expect(process.terminationStatus == (vector.proven ? 0 : 1), "\(vector.name): exit status")
        }
    }

    @Test("every truncation and extension of from-nothing is refused")
    func badLengths() throws {
        let bytes = Array(try Data(contentsOf: Self.directory.appendingPathComponent("from-nothing.bin")))
        ClearingSyncTests.expectBadLengths("from-nothing", bytes) { try ForkEvidence.decode($0) != nil }
    }

    @Test("the vectors built afresh give the same verdicts as the stored ones")
    func freshVectors() throws {
        let expected = Dictionary(uniqueKeysWithValues: try Self.manifest().map { ($0.name, $0) })
        for (name, evidence) in try Self.build() {
            let verdict = try #require(try ForkEvidence.decode(evidence.encoded)).verify()
            #expect(Self.code(verdict) == expected[name]?.code, "\(name): \(verdict)")
        }
    }

    /// Writes the vectors and the manifest: run once with SECURE_WRITE_EVIDENCE7=1.
    @Test(
        "writes the vectors (only with SECURE_WRITE_EVIDENCE7=1)",
        .enabled(if: ProcessInfo.processInfo.environment["SECURE_WRITE_EVIDENCE7"] == "1"))
    func writeVectors() throws {
        try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        var manifest =
            "# name verdict code sha256 (docs/CLEARING.md §2.5; written by EvidenceType7Tests.writeVectors)\n"
        for (name, evidence) in try Self.build() {
            let bytes = evidence.encoded
            try Data(bytes).write(to: Self.directory.appendingPathComponent(name + ".bin"))
            let verdict = evidence.verify()
            manifest +=
                "\(name) \(verdict.isProven ? "proven" : "not-proven") \(Self.code(verdict)) "
                + "\(Hex.encode(SHA256.hash(bytes)))\n"
        }
        try manifest.write(to: Self.directory.appendingPathComponent("MANIFEST"), atomically: true, encoding: .utf8)
    }

    static let names = [
        "from-nothing", "forged-deposit", "reversal-without-refusal", "hidden-debit", "honest", "unclaimed-opaque",
    ]

    static func eur(_ cents: Int64) -> Money { ClearingFixture.eur(cents) }

    /// A claim over all of `wallet`'s entries for `issuer`, with `map`.
    static func claim(_ wallet: SoftwareWallet, issuer: WalletID, map: OpaqueMap) throws -> ClaimedMap {
        let checkpoint = try wallet.checkpoint().checkpoint
        let claim = try SyncClaim(
            walletID: wallet.walletID, walletKey: wallet.key, keyDate: KeyDate(checkpoint: checkpoint), issuer: issuer,
            fromSize: 0, toSize: checkpoint.size, opaqueMapDigest: map.digest, session: .random()
        ).sign(with: wallet.signer)
        return ClaimedMap(claim: claim, map: map)
    }

    /// Type 7 evidence over all of `wallet`'s entries, `hide` sent opaque as class 0, with `claims` (all
    /// entries claimed by one claim when nil).
    static func evidence(
        _ wallet: SoftwareWallet, issuer: WalletID, issuerLogs: [KeyEventLog], peers: [KeyEventLog] = [],
        sent: [SignedTransfer] = [], hide: Set<UInt64> = [], checkpoint: SignedCheckpoint? = nil,
        claimed: Bool = true
    ) throws -> ForkEvidence {
        var byID: [TransferID: SignedTransfer] = [:]
        for transfer in sent { byID[transfer.payload.order.transferID] = transfer }
        var (entries, map) = try SyncEntry.make(wallet.entries, issuer: issuer, sentTransfer: { byID[$0] })
        var items = map.items
        for position in hide.sorted() {
            entries[Int(position)] = .opaque(OpaqueLeaf(wallet.entries[Int(position)]))
            items.append(OpaqueMap.Item(position: position, kind: .noMoney))
        }
        map = OpaqueMap(items: items.sorted { $0.position < $1.position })
        let claims = claimed ? [try claim(wallet, issuer: issuer, map: map)] : []
        let mismatch = ReplayMismatch(
            checkpoint: try checkpoint ?? wallet.checkpoint(), entries: entries, claims: claims,
            issuerLogs: issuerLogs.map(\.events), peerLogs: peers.map(PeerLog.init), sentTransfers: sent,
            assetIssuer: issuer)
        return ForkEvidence(.replayMismatch(mismatch), log: wallet.log)
    }

    /// The six vectors of §2.5.
    static func build() throws -> [(String, ForkEvidence)] {
        var result: [(String, ForkEvidence)] = []
        let issuer = try SoftwareSigner()
        let issuerLog = try SoftwareWallet.issuerLog(of: issuer)
        let issuerID = issuerLog.walletID

        // from-nothing: inception only, a checkpoint claiming 100.00 EUR of issuer 1a×32.
        let nobody = WalletID(bytes: [UInt8](repeating: 0x1a, count: 32))!
        let lonely = try SoftwareWallet(seed: 71)
        var padded = lonely
        try padded.fundFromNothing(eur(10_000), issuer: nobody)
        let lie = try Checkpoint(
            walletID: lonely.walletID, walletKey: lonely.key, keySequence: 0, keyEventPosition: 0, size: 1,
            root: lonely.tree.root(), head: lonely.state.head, time: lonely.time,
            snapshot: LedgerSnapshot(padded.state), index: Digest32(of: [])
        ).sign(with: lonely.signer)
        result.append(
            ("from-nothing", try evidence(lonely, issuer: nobody, issuerLogs: [], checkpoint: lie, claimed: false)))

        // forged-deposit: a voucher naming the issuer, signed by another software key.
        var forger = try SoftwareWallet(seed: 72)
        let stranger = try SoftwareSigner()
        let voucher = try Voucher(
            issuerWalletID: issuerID, issuerKey: stranger.publicKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 2),
            recipientWalletID: forger.walletID,
            amount: eur(5_000), voucherID: .random()
        ).sign(with: stranger)
        try forger.append(
            EntryDraft(
                kind: .deposit, amount: voucher.payload.assetAmount, counterparty: issuerID.bytes,
                statement: voucher.statementReference, payload: voucher.encoded))
        result.append(("forged-deposit", try evidence(forger, issuer: issuerID, issuerLogs: [issuerLog])))

        // reversal-without-refusal: a payment out reversed by a refusal naming the payee but signed by another
        // wallet's key (the payer's own key would reuse the debit's statement reference, a rule broken).
        var payer = try SoftwareWallet(seed: 73)
        let payee = try SoftwareWallet(seed: 74)
        let mallory = try SoftwareWallet(seed: 76)
        try payer.deposit(eur(3_000), issuer: issuer)
        let transfer = try payer.pay(payee.walletID, amount: eur(1_000))
        let ownRefusal = try mallory.refusal(of: transfer, reason: .checkpointInvalid)
        try payer.append(
            EntryDraft(
                kind: .reversal, amount: ownRefusal.payload.amount, counterparty: payee.walletID.bytes,
                statement: ownRefusal.statementReference, payload: ownRefusal.encoded))
        result.append(
            (
                "reversal-without-refusal",
                try evidence(payer, issuer: issuerID, issuerLogs: [issuerLog], peers: [payee.log], sent: [transfer])
            ))

        // hidden-debit, honest, unclaimed-opaque: inception, deposit, payment out (and a budget).
        var honest = try SoftwareWallet(seed: 75)
        try honest.deposit(eur(8_000), issuer: issuer)
        let paid = try honest.pay(payee.walletID, amount: eur(2_500))
        result.append(
            (
                "hidden-debit",
                try evidence(
                    honest, issuer: issuerID, issuerLogs: [issuerLog], peers: [payee.log], sent: [paid], hide: [2])
            ))
        result.append(
            (
                "honest",
                try evidence(honest, issuer: issuerID, issuerLogs: [issuerLog], peers: [payee.log], sent: [paid])
            ))
        let budget = try Budget(
            category: "food", limit: eur(5_000), window: .month, isHardCap: false, timeZoneIdentifier: "UTC")
        try honest.append(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.set(budget).payload))
        result.append(
            (
                "unclaimed-opaque",
                try evidence(
                    honest, issuer: issuerID, issuerLogs: [issuerLog], peers: [payee.log], sent: [paid],
                    claimed: false)
            ))
        return result
    }
}
