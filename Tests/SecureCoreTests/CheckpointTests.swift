import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// A wallet's ledger with its tree, able to sign checkpoints: enough to build real forks. Its key-event log
/// is the inception of `signer`'s key, whose digest is the wallet id, as fork evidence v2 needs.
struct SignedLedger {
    var builder = LedgerBuilder()
    var tree = MerkleTree()
    let signer: SoftwareSigner
    let log: KeyEventLog
    var walletID: WalletID { log.walletID }

    init(signer: SoftwareSigner) throws {
        self.signer = signer
        let inception = KeyEvent.inception(
            signingKey: signer.publicKey, nextKey: try SoftwareSigner().publicKey, agreementKey: signer.publicKey)
        log = try KeyEventLog(inception: try SignedKeyEvent(inception, signer: signer))
        try append(.keyEvent, nil, payload: inception.encoded)
    }

    mutating func append(
        _ kind: EntryKind, _ amount: Money?, statement: StatementReference? = nil,
        payload: [UInt8] = [], note: String = ""
    ) throws {
        let entry = try builder.append(kind, amount, statement: statement, payload: payload)
        tree.append(leafHash: Merkle.leafHash(entry.encoded))
    }

    mutating func deposit(_ units: Int64, id: UInt8) throws {
        try append(.deposit, Fixture.eur(units), statement: Fixture.statement(signer: 0x1A, id: id, payload: id))
    }

    mutating func pay(_ units: Int64, id: UInt8) throws {
        try append(
            .paymentOut, Fixture.eur(units),
            statement: StatementReference(
                signer: LedgerBuilder.ownSigner, id: Fixture.id(id), payloadDigest: Fixture.id(id)))
    }

    func checkpoint() throws -> SignedCheckpoint {
        try Checkpoint(
            walletID: walletID, walletKey: signer.publicKey, keySequence: 0, keyEventPosition: 0,
            state: builder.state, root: tree.root(), time: builder.time,
            index: LedgerIndex.digest(
                statements: builder.entries.compactMap(LedgerIndex.statementRow(of:)), outgoing: [])
        ).sign(with: signer)
    }

    func leaf(_ index: Int) -> [UInt8] { builder.entries[index].encoded }
}

@Suite("Checkpoints")
struct CheckpointTests {
    static func ledger() throws -> SignedLedger {
        var ledger = try SignedLedger(signer: SoftwareSigner())
        try ledger.deposit(10_000, id: 1)
        try ledger.builder.setBudget("food", Fixture.eur(5000))
        try ledger.append(.paymentOut, Fixture.eur(1234), statement: Fixture.statement(signer: 0x0A, id: 9, payload: 9))
        // Yen of an issuer whose id sorts before the euros' issuer (0x1A): balances are ordered by issuer first.
        try ledger.builder.deposit(Money(minorUnits: 7, currency: .jpy), issuer: 0x01)
        return ledger
    }

    @Test("a checkpoint commits to size, root, head and the replayed state, and verifies under its key")
    func signAndVerify() throws {
        var ledger = try CheckpointTests.ledger()
        _ = try ledger.builder.pay(Fixture.eur(100), category: "food")
        let signed = try ledger.checkpoint()
        let checkpoint = signed.checkpoint
        #expect(checkpoint.size == UInt64(ledger.builder.entries.count))
        #expect(checkpoint.head == ledger.builder.entries.last!.link)
        #expect(checkpoint.snapshot == LedgerSnapshot(try LedgerState.replay(ledger.builder.entries)))
        #expect(checkpoint.snapshot.balances.map(\.money.description) == ["7 JPY", "86.66 EUR"])
        #expect(checkpoint.snapshot.balances.map(\.issuer) == [Fixture.id(0x01), Fixture.issuer])
        #expect(checkpoint.snapshot.windowTotals.map(\.spent) == [Fixture.eur(100)])
        #expect(signed.isValid(signedBy: ledger.signer.publicKey))
        #expect(try !signed.isValid(signedBy: SoftwareSigner().publicKey))
        // Under another label the same signer's signature does not count.
        let fileSignature = try ledger.signer.sign(checkpoint.encoded, label: .file)
        #expect(!SignedCheckpoint(checkpoint: checkpoint, signature: fileSignature).isSelfConsistent)
    }

    @Test(
        "round-trips; truncations are short; extensions refused; bit 2 flipped anywhere leaves no valid checkpoint")
    func encoding() throws {
        let signed = try CheckpointTests.ledger().checkpoint()
        let bytes = signed.encoded
        #expect(try SignedCheckpoint.decode(bytes) == signed)
        #expect(try Checkpoint.decode(signed.checkpoint.encoded) == signed.checkpoint)
        for length in 0..<bytes.count {
            #expect(try SignedCheckpoint.decode(Array(bytes.prefix(length))) == nil, "case length \(length)")
        }
        #expect(throws: FormatError(.trailingBytes, "")) { try SignedCheckpoint.decode(bytes + [0]) }
        var stillValid = 0
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= 0x04
            if let decoded = try? SignedCheckpoint.decode(flipped), decoded.isSelfConsistent { stillValid += 1 }
        }
        #expect(stillValid == 0, "a flipped byte left a valid signed checkpoint")
    }

    @Test("snapshots in non-canonical order are refused")
    func canonicalOrder() throws {
        let checkpoint = try CheckpointTests.ledger().checkpoint().checkpoint
        var bytes = checkpoint.encoded
        // Balances start after the fixed fields: 1 + 32 + 65 + 8 + 8 + 8 + 32 + 32 + 8 = 194, then a count byte.
        // Each balance is an asset amount of 32 + 12 = 44 bytes.
        #expect(bytes[194] == 2)
        let first = Array(bytes[195..<239])
        let second = Array(bytes[239..<283])
        bytes.replaceSubrange(195..<283, with: second + first)
        #expect(throws: FormatError(.notCanonical, "")) { try Checkpoint.decode(bytes) }
        // The same asset twice is not strictly increasing either.
        bytes.replaceSubrange(195..<283, with: first + first)
        #expect(throws: FormatError(.notCanonical, "")) { try Checkpoint.decode(bytes) }
    }
}

@Suite("Fork evidence")
struct ForkEvidenceTests {
    /// One wallet, one key, two histories that share entries 0…5 and differ from position 6 on: what a
    /// wallet restored from an old copy produces when it spends again.
    static func fork(extraEntriesInSecond: Int) throws -> (SignedLedger, SignedLedger) {
        var first = try SignedLedger(signer: SoftwareSigner())
        try first.deposit(10_000, id: 1)
        for id in 2...5 { try first.pay(100, id: UInt8(id)) }
        var second = first
        try first.pay(500, id: 20)
        try first.pay(600, id: 21)
        try second.pay(500, id: 30) // the same money spent again, to someone else
        try second.pay(600, id: 31)
        for id in 0..<extraEntriesInSecond { try second.append(.keyEvent, nil, payload: [UInt8(id)]) }
        return (first, second)
    }

    @Test("(a) equal sizes with different roots prove a fork; the same checkpoint twice does not")
    func conflictingCheckpoints() throws {
        let (first, second) = try ForkEvidenceTests.fork(extraEntriesInSecond: 0)
        let a = try first.checkpoint()
        let b = try second.checkpoint()
        #expect(a.checkpoint.size == b.checkpoint.size)
        #expect(ForkEvidence(.conflictingCheckpoints(a, b), log: first.log).verify().isProven)
        #expect(reason(ForkEvidence(.conflictingCheckpoints(a, a), log: first.log).verify()) == .noConflict)
        // A second signature over the same checkpoint is not a fork either.
        let again = try a.checkpoint.sign(with: first.signer)
        guard case .notProven(.noConflict, _) = ForkEvidence(.conflictingCheckpoints(a, again), log: first.log).verify()
        else {
            Issue.record("two signatures of one checkpoint counted as a fork")
            return
        }
    }

    @Test("(a) is refused for different sizes, wallets or a bad signature")
    func conflictingCheckpointsRefused() throws {
        let (first, second) = try ForkEvidenceTests.fork(extraEntriesInSecond: 2)
        let a = try first.checkpoint()
        let b = try second.checkpoint()
        #expect(reason(ForkEvidence(.conflictingCheckpoints(a, b), log: first.log).verify()) == .sizesDiffer)
        let strangerLedger = try SignedLedger(signer: SoftwareSigner())
        let stranger = try strangerLedger.checkpoint()
        #expect(
            reason(ForkEvidence(.conflictingCheckpoints(a, stranger), log: first.log).verify()) == .differentWallets)
        let forged = SignedCheckpoint(checkpoint: b.checkpoint, signature: a.signature)
        #expect(reason(ForkEvidence(.conflictingCheckpoints(a, forged), log: first.log).verify()) == .badSignature)
        // Another wallet's log, however valid, proves nothing against this wallet id.
        #expect(reason(ForkEvidence(.conflictingCheckpoints(a, b), log: strangerLedger.log).verify()) == .wrongLog)
    }

    @Test("(b) one index with two different leaves proves a fork even after padding to other sizes")
    func conflictingLeaves() throws {
        let (first, second) = try ForkEvidenceTests.fork(extraEntriesInSecond: 5)
        let a = try first.checkpoint()
        let b = try second.checkpoint()
        #expect(a.checkpoint.size != b.checkpoint.size)
        func evidence(_ index: Int, firstLeaf: [UInt8]? = nil, firstProof: [Digest32]? = nil) -> ForkEvidence {
            ForkEvidence(
                .conflictingLeaves(
                    ConflictingLeaves(
                        first: a, second: b, index: UInt64(index), firstLeaf: firstLeaf ?? first.leaf(index),
                        firstProof: firstProof ?? first.tree.inclusionProof(index: UInt64(index)),
                        secondLeaf: second.leaf(index), secondProof: second.tree.inclusionProof(index: UInt64(index)))),
                log: first.log)
        }
        #expect(evidence(6).verify().isProven)
        #expect(evidence(7).verify().isProven)
        #expect(reason(evidence(3).verify()) == .noConflict)
        #expect(reason(evidence(6, firstProof: first.tree.inclusionProof(index: 5)).verify()) == .proofInvalid)
        #expect(reason(evidence(6, firstLeaf: second.leaf(5)).verify()) == .proofInvalid)
        let outOfRange = ForkEvidence(
            .conflictingLeaves(
                ConflictingLeaves(
                    first: a, second: b, index: 9, firstLeaf: [1], firstProof: [], secondLeaf: second.leaf(9),
                    secondProof: second.tree.inclusionProof(index: 9))),
            log: first.log)
        #expect(reason(outOfRange.verify()) == .indexOutOfRange)
    }

    @Test("evidence round-trips; truncations are short; bit 4 flipped in any byte is refused or proves nothing")
    func encoding() throws {
        let (first, second) = try ForkEvidenceTests.fork(extraEntriesInSecond: 1)
        let evidence = ForkEvidence(
            .conflictingLeaves(
                ConflictingLeaves(
                    first: try first.checkpoint(), second: try second.checkpoint(), index: 6,
                    firstLeaf: first.leaf(6), firstProof: first.tree.inclusionProof(index: 6),
                    secondLeaf: second.leaf(6), secondProof: second.tree.inclusionProof(index: 6))),
            log: first.log)
        let bytes = evidence.encoded
        let decoded = try #require(try ForkEvidence.decode(bytes))
        #expect(decoded == evidence && decoded.verify().isProven)
        #expect(throws: FormatError(.trailingBytes, "")) { try ForkEvidence.decode(bytes + [0]) }
        for length in 0..<bytes.count {
            #expect(try ForkEvidence.decode(Array(bytes.prefix(length))) == nil, "case length \(length)")
        }
        var refused = 0, notProven = 0
        var stillProven: [Int] = []
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= 0x10
            do {
                guard let decoded = try ForkEvidence.decode(flipped) else {
                    refused += 1 // a length grew past the end
                    continue
                }
                #expect(decoded != evidence, "a flip at byte \(index) decoded to the same evidence")
                if decoded.verify().isProven { stillProven.append(index) } else { notProven += 1 }
            } catch is FormatError {
                refused += 1
            }
        }
        #expect(stillProven.isEmpty, "flips at bytes \(stillProven) still prove a fork")
        #expect(
            refused > 0 && notProven > 0 && refused + notProven == bytes.count,
            "refused \(refused), not proven \(notProven)")
        let typeA = ForkEvidence(
            .conflictingCheckpoints(try first.checkpoint(), try second.checkpoint()), log: first.log)
        #expect(try ForkEvidence.decode(typeA.encoded) == typeA)
    }

    func reason(_ verdict: ForkVerdict) -> ForkVerdict.NotProvenReason? {
        if case .notProven(let reason, _) = verdict { return reason }
        return nil
    }
}
