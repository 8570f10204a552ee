import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// A history of real signed statements for the clearing's tests: Alice deposits a software issuer's voucher,
/// sets a budget (opaque), pays Bob (a payment out with its transfer), is paid back by Bob (a payment in),
/// and pays Bob once more, which Bob refuses (a reversal). `SoftwareWallet`s run the real statement checks.
struct ClearingFixture {
    var alice: SoftwareWallet
    var bob: SoftwareWallet
    let issuer: SoftwareSigner
    let issuerLog: KeyEventLog
    var sent: [TransferID: SignedTransfer] = [:]

    var issuerID: WalletID { issuerLog.walletID }

    static func eur(_ cents: Int64) -> Money { try! Money(minorUnits: cents, currency: .eur) }

    init(seed: UInt64 = 1) throws {
        alice = try SoftwareWallet(seed: seed)
        bob = try SoftwareWallet(seed: seed + 1000)
        issuer = try SoftwareSigner()
        issuerLog = try SoftwareWallet.issuerLog(of: issuer)
    }

    /// Deposit, budget, payment out to Bob.
    mutating func firstPart() throws {
        try alice.deposit(Self.eur(10_000), issuer: issuer)
        let budget = try Budget(
            category: "food", limit: Self.eur(5_000), window: .month, isHardCap: false, timeZoneIdentifier: "UTC")
        try alice.append(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.set(budget).payload))
        try pay(4_000)
    }

    /// Bob pays Alice back 1,500; Alice pays 700, which Bob refuses.
    mutating func secondPart() throws {
        let back = try bob.pay(alice.walletID, amount: Self.eur(1_500))
        let verdict = TransferCheck.evaluate(
            back, walletID: alice.walletID, payerLog: bob.log, state: alice.state,
            policy: TransferPolicy(trustedIssuers: [issuerID], acceptsWithoutProximity: true))
        _ = try #require(try alice.carryOut(verdict))
        let refused = try pay(700, credited: false)
        let refusal = try bob.refusal(of: refused, reason: .checkpointInvalid)
        let reversal = RefusalCheck.evaluate(refusal, of: refused, payeeLog: bob.log, state: alice.state)
        _ = try #require(try alice.carryOut(reversal))
    }

    @discardableResult
    mutating func pay(_ cents: Int64, credited: Bool = true) throws -> SignedTransfer {
        let transfer = try alice.pay(bob.walletID, amount: Self.eur(cents))
        sent[transfer.payload.order.transferID] = transfer
        guard credited else { return transfer }
        let verdict = TransferCheck.evaluate(
            transfer, walletID: bob.walletID, payerLog: alice.log, state: bob.state,
            policy: TransferPolicy(trustedIssuers: [issuerID], acceptsWithoutProximity: true))
        _ = try #require(try bob.carryOut(verdict))
        return transfer
    }

    /// The logs the store knows: the issuer's, and (with `knowsBob`) Bob's.
    func knownLog(knowsBob: Bool = false) -> (WalletID) -> KeyEventLog? {
        let issuerLog = issuerLog, bobLog = bob.log
        return { id in id == issuerLog.walletID ? issuerLog : (knowsBob && id == bobLog.walletID ? bobLog : nil) }
    }

    /// What Alice sends for the entries from `from` on: chunks of at most `chunkSize`, the claim, the
    /// checkpoint, the consistency proof and the map. `forms` overrides how entries go (hidden debits).
    func upload(
        from: UInt64, chunkSize: Int = 2, session: SyncSessionID = .random(), withBobLog: Bool = true,
        hide: Set<UInt64> = []
    ) throws -> (
        chunks: [SyncChunk], claim: SignedSyncClaim, checkpoint: SignedCheckpoint, proof: [Digest32],
        map: OpaqueMap
    ) {
        let all = try SyncEntry.make(alice.entries, issuer: issuerID, sentTransfer: { sent[$0] })
        var entries = Array(all.entries.dropFirst(Int(from)))
        var items = all.map.items.filter { $0.position >= from }
        for position in hide.sorted() {
            let index = Int(position - from)
            entries[index] = .opaque(OpaqueLeaf(alice.entries[Int(position)]))
            items.append(OpaqueMap.Item(position: position, kind: .noMoney))
        }
        let map = OpaqueMap(items: items.sorted { $0.position < $1.position })
        let chunks = SyncChunk.chunks(
            walletID: alice.walletID, session: session, entries: entries,
            keyEvents: from == 0 ? alice.log.events : [], peerLogs: withBobLog ? [bob.walletID: bob.log] : [:],
            entryCountMax: chunkSize)
        let checkpoint = try alice.checkpoint()
        let claim = try SyncClaim(
            walletID: alice.walletID, walletKey: alice.key, keyDate: KeyDate(checkpoint: checkpoint.checkpoint),
            issuer: issuerID, fromSize: from, toSize: checkpoint.checkpoint.size, opaqueMapDigest: map.digest,
            session: session
        ).sign(with: alice.signer)
        let proof = from == 0 ? [] : alice.tree.consistencyProof(oldSize: from)
        return (chunks, claim, checkpoint, proof, map)
    }

    /// Runs a whole sync through `sync`; the first chunk verdict that is not accepted ends it.
    static func run(
        _ sync: inout WalletSync,
        _ upload: (
            chunks: [SyncChunk], claim: SignedSyncClaim, checkpoint: SignedCheckpoint, proof: [Digest32],
            map: OpaqueMap
        )
    ) -> SyncOutcome {
        for chunk in upload.chunks {
            switch sync.accept(chunk) {
            case .accepted: continue
            case .refused(let refusal): return .refused(refusal)
            case .evidence(let evidence): return .evidence(evidence)
            }
        }
        return sync.close(
            claim: upload.claim, checkpoint: upload.checkpoint, consistencyProof: upload.proof, opaqueMap: upload.map)
    }
}

@Suite("Clearing sync: upload format and per-wallet verification")
struct ClearingSyncTests {
    func accepted(_ outcome: SyncOutcome, sourceLocation: SourceLocation = #_sourceLocation) -> SyncAcceptance? {
        guard case .accepted(let acceptance) = outcome else {
            Issue.record("not accepted: \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        return acceptance
    }

    func refusal(_ outcome: SyncOutcome) -> SyncRefusalCode? {
        if case .refused(let refusal) = outcome { return refusal.code }
        return nil
    }

    @Test("an honest first sync and a later one are accepted; the state survives its encoding")
    func honestSyncs() throws {
        var fixture = try ClearingFixture()
        try fixture.firstPart()
        var first = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let upload = try fixture.upload(from: 0)
        #expect(upload.chunks.count == 2 && upload.map.items.map(\.position) == [2])
        let acceptance = try #require(accepted(ClearingFixture.run(&first, upload)))
        #expect(acceptance.entries.map(\.entry.kind) == [.keyEvent, .deposit, .paymentOut])
        #expect(acceptance.entries[2].transfer != nil)
        let stored = try #require(try WalletSyncState.decode(acceptance.state.encoded))
        #expect(stored == acceptance.state)
        #expect(stored.money.balance(Asset(issuer: fixture.issuerID, currency: .eur)) == ClearingFixture.eur(6_000))

        try fixture.secondPart()
        var later = WalletSync(resuming: stored, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let next = try fixture.upload(from: stored.size, chunkSize: 1024)
        let second = try #require(accepted(ClearingFixture.run(&later, next)))
        #expect(second.entries.map(\.entry.kind) == [.paymentIn, .paymentOut, .reversal])
        #expect(second.heldCheckpoints.map(\.checkpoint.walletID) == [fixture.bob.walletID])
        #expect(
            second.state.money.balance(Asset(issuer: fixture.issuerID, currency: .eur))
                == ClearingFixture.eur(7_500))
        #expect(second.state.checkpoint == next.checkpoint)
        #expect(try WalletSyncState.decode(second.state.encoded) == second.state)
    }

    @Test("a chunk out of place, of another wallet or session is refused with its code")
    func outOfPlace() throws {
        var fixture = try ClearingFixture()
        try fixture.firstPart()
        let upload = try fixture.upload(from: 0)
        var sync = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        guard case .refused(let refusal) = sync.accept(upload.chunks[1]) else {
            Issue.record("a chunk starting at 2 was accepted first")
            return
        }
        #expect(refusal.code == .wrongPosition)
        #expect(sync.accept(upload.chunks[0]) == .refused(SyncRefusal(.ended, "the sync has ended")))
        var other = WalletSync(first: fixture.bob.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        guard case .refused(let wrong) = other.accept(upload.chunks[0]) else { return }
        #expect(wrong.code == .wrongWallet)
        var twoSessions = WalletSync(
            first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let again = try fixture.upload(from: 0)
        #expect(twoSessions.accept(upload.chunks[0]) == .accepted(next: 2))
        guard case .refused(let session) = twoSessions.accept(again.chunks[1]) else { return }
        #expect(session.code == .sessionMismatch)
    }

    @Test("a missing peer log, a wrong map, a bad proof and a short upload are refused")
    func refusals() throws {
        var fixture = try ClearingFixture()
        try fixture.firstPart()
        var badMap = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        var upload = try fixture.upload(from: 0)
        upload.map = OpaqueMap(items: [])
        #expect(refusal(ClearingFixture.run(&badMap, upload)) == .opaqueMapMismatch)

        var short = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        upload = try fixture.upload(from: 0)
        upload.chunks.removeLast()
        #expect(refusal(ClearingFixture.run(&short, upload)) == .incomplete)

        var claimless = WalletSync(
            first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        upload = try fixture.upload(from: 0)
        let otherClaim = try fixture.upload(from: 0).claim
        upload.claim = otherClaim
        #expect(refusal(ClearingFixture.run(&claimless, upload)) == .sessionMismatch)

        var first = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let state = try #require(accepted(ClearingFixture.run(&first, try fixture.upload(from: 0)))).state
        try fixture.secondPart()
        var later = WalletSync(resuming: state, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        upload = try fixture.upload(from: state.size)
        upload.proof = []
        #expect(refusal(ClearingFixture.run(&later, upload)) == .consistencyInvalid)
        // Bob's credit needs Bob's log, which neither the chunks nor the store hold.
        var noLog = WalletSync(resuming: state, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let withoutLog = try fixture.upload(from: state.size, withBobLog: false)
        #expect(refusal(ClearingFixture.run(&noLog, withoutLog)) == .missingSource)
        var known = WalletSync(resuming: state, issuer: fixture.issuerID, knownLog: fixture.knownLog(knowsBob: true))
        #expect(accepted(ClearingFixture.run(&known, withoutLog)) != nil)
    }

    @Test("a forged deposit and a hidden debit give proven type 7 evidence")
    func replayEvidence() throws {
        var forger = try ClearingFixture(seed: 7)
        try forger.alice.fundFromNothing(ClearingFixture.eur(90_000), issuer: forger.issuerID)
        var sync = WalletSync(first: forger.alice.walletID, issuer: forger.issuerID, knownLog: forger.knownLog())
        guard case .evidence(let evidence) = ClearingFixture.run(&sync, try forger.upload(from: 0)) else {
            Issue.record("a forged deposit gave no evidence")
            return
        }
        guard case .forkProven(let reason) = try #require(try ForkEvidence.decode(evidence.encoded)).verify() else {
            Issue.record("the decoded evidence proves nothing")
            return
        }
        #expect(reason.hasPrefix("statement-invalid"), "\(reason)")

        var hider = try ClearingFixture(seed: 8)
        try hider.firstPart()
        var hidden = WalletSync(first: hider.alice.walletID, issuer: hider.issuerID, knownLog: hider.knownLog())
        guard case .evidence(let hiddenEvidence) = ClearingFixture.run(&hidden, try hider.upload(from: 0, hide: [3]))
        else {
            Issue.record("a hidden debit gave no evidence")
            return
        }
        guard case .forkProven(let why) = hiddenEvidence.verify() else { return }
        #expect(why.hasPrefix("balance-mismatch"), "\(why)")
        #expect(hiddenEvidence.bannedWallet == hider.alice.walletID)
    }

    @Test("a checkpoint of the synced size that differs from a held one gives type 1")
    func heldCheckpointConflict() throws {
        var fixture = try ClearingFixture(seed: 9)
        try fixture.firstPart()
        var fork = fixture.alice
        try fork.deposit(ClearingFixture.eur(1), issuer: fixture.issuer)
        try fixture.alice.deposit(ClearingFixture.eur(2), issuer: fixture.issuer)
        let held = try fork.checkpoint()
        var sync = WalletSync(
            first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog(), held: [held])
        guard case .evidence(let evidence) = ClearingFixture.run(&sync, try fixture.upload(from: 0)),
            case .conflictingCheckpoints = evidence.kind
        else {
            Issue.record("no type 1")
            return
        }
    }

    @Test("a checkpoint signed by a key after its rotation gives type 4")
    func retiredKey() throws {
        var fixture = try ClearingFixture(seed: 10)
        try fixture.firstPart()
        let retired = fixture.alice.signer
        try fixture.alice.rotate()
        try fixture.alice.deposit(ClearingFixture.eur(3), issuer: fixture.issuer)
        var upload = try fixture.upload(from: 0)
        let honest = upload.checkpoint.checkpoint
        upload.checkpoint = try Checkpoint(
            walletID: honest.walletID, walletKey: retired.publicKey, keySequence: 0, keyEventPosition: 0,
            size: honest.size, root: honest.root, head: honest.head, time: honest.time, snapshot: honest.snapshot,
            index: honest.index
        ).sign(with: retired)
        var sync = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        guard case .evidence(let evidence) = ClearingFixture.run(&sync, upload),
            case .retiredKeySignature = evidence.kind
        else {
            Issue.record("no type 4")
            return
        }
        #expect(evidence.verify().isProven)
    }

    @Test("a chunk's key event that conflicts with the followed log gives type 3")
    func conflictingKeyEvent() throws {
        var fixture = try ClearingFixture(seed: 11)
        try fixture.firstPart()
        var fork = fixture.alice
        try fixture.alice.rotate()
        var first = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let state = try #require(accepted(ClearingFixture.run(&first, try fixture.upload(from: 0)))).state
        try fork.rotate()
        try fork.deposit(ClearingFixture.eur(5), issuer: fixture.issuer)
        let chunk = SyncChunk(
            walletID: fork.walletID, session: .random(), firstPosition: state.size, keyEvents: [fork.log.events[1]],
            peerLogs: [], entries: [.whole(fork.entries[Int(state.size)], nil)])
        var later = WalletSync(resuming: state, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        guard case .evidence(let evidence) = later.accept(chunk), case .conflictingKeyEvents = evidence.kind else {
            Issue.record("no type 3")
            return
        }
        #expect(evidence.verify().isProven)
    }

    @Test("entries go whole or opaque by kind and issuer")
    func forms() throws {
        var fixture = try ClearingFixture(seed: 3)
        try fixture.firstPart()
        let other = try SoftwareSigner()
        try fixture.alice.deposit(ClearingFixture.eur(100), issuer: other)
        #expect(
            SyncForm.forms(of: fixture.alice.entries, issuer: fixture.issuerID)
                == [.whole, .whole, .opaque(.noMoney), .whole, .opaque(.otherIssuerMoney)])
    }

    @Test("chunk, claim, map, admission and state codecs round-trip; every truncation and extension is refused")
    func codecs() throws {
        var fixture = try ClearingFixture(seed: 4)
        try fixture.firstPart()
        let upload = try fixture.upload(from: 0, chunkSize: 1024)
        let chunk = upload.chunks[0]
        #expect(try SyncChunk.decode(chunk.encoded) == chunk)
        #expect(try SyncClaim.decode(upload.claim.payload.encoded) == upload.claim.payload)
        #expect(try SignedSyncClaim.decode(upload.claim.encoded) == upload.claim)
        #expect(try OpaqueMap.decode(upload.map.encoded) == upload.map)
        let deposit = fixture.alice.entries[1]
        let admission = AdmissionRequest(
            log: fixture.alice.log, checkpoint: upload.checkpoint, entry: deposit,
            proof: fixture.alice.tree.inclusionProof(index: 1))
        #expect(try AdmissionRequest.decode(admission.encoded) == admission)
        let sources = StatementSources(
            walletID: fixture.alice.walletID, trustedIssuers: [fixture.issuerID],
            peerLog: fixture.knownLog(), sentTransfer: { _ in nil })
        #expect(admission.problem(issuer: fixture.issuerID, sources: sources) == nil)
        let wrongIssuer = try SoftwareWallet.issuerLog(of: try SoftwareSigner()).walletID
        #expect(admission.problem(issuer: wrongIssuer, sources: sources) != nil)
        var sync = WalletSync(first: fixture.alice.walletID, issuer: fixture.issuerID, knownLog: fixture.knownLog())
        let state = try #require(accepted(ClearingFixture.run(&sync, upload))).state
        #expect(try WalletSyncState.decode(state.encoded) == state)

        let cases: [(String, [UInt8], ([UInt8]) throws -> Bool)] = [
            ("chunk", chunk.encoded, { try SyncChunk.decode($0) != nil }),
            ("claim", upload.claim.encoded, { try SignedSyncClaim.decode($0) != nil }),
            ("map", upload.map.encoded, { try OpaqueMap.decode($0) != nil }),
            ("admission", admission.encoded, { try AdmissionRequest.decode($0) != nil }),
            ("state", state.encoded, { try WalletSyncState.decode($0) != nil }),
        ]
        for (name, bytes, decodes) in cases {
            Self.expectBadLengths(name, bytes, decodes)
        }
    }

    /// Every proper prefix is short (nil) or malformed (throws), never a value; every extension throws.
    static func expectBadLengths(_ name: String, _ bytes: [UInt8], _ decodes: ([UInt8]) throws -> Bool) {
        for length in 0..<bytes.count {
            let decoded = (try? decodes(Array(bytes.prefix(length)))) ?? false
            #expect(!decoded, "\(name): a prefix of \(length) of \(bytes.count) bytes decoded")
        }
        for extra in [[UInt8(0)], [0xff, 0xff]] {
            #expect(throws: (any Error).self, "\(name) extended by \(extra.count)") {
                _ = try decodes(bytes + extra)
            }
        }
    }

    @Test("malformed chunks are refused: an unknown form, a wrong version; an empty chunk decodes")
    func malformed() throws {
        var fixture = try ClearingFixture(seed: 5)
        try fixture.firstPart()
        let chunk = try fixture.upload(from: 0, chunkSize: 1024).chunks[0]
        var bytes = chunk.encoded
        bytes[0] = 2
        #expect(throws: (any Error).self) { _ = try SyncChunk.decode(bytes) }
        let empty = [UInt8(1)] + fixture.alice.walletID.bytes + [UInt8](repeating: 0, count: 16 + 8 + 2 + 2 + 2)
        // A chunk of no entries is well formed: a sync with nothing new sends one, carrying only its session.
        #expect(try SyncChunk.decode(empty)?.entries.isEmpty == true)
        let badForm =
            [UInt8(1)] + fixture.alice.walletID.bytes + [UInt8](repeating: 0, count: 16 + 8 + 2 + 2)
            + [0, 1, 3]
        #expect(throws: (any Error).self) { _ = try SyncChunk.decode(badForm) }
        #expect(throws: (any Error).self) {
            _ = try SyncChunk.decode([UInt8](repeating: 1, count: ClearingLimits.syncChunkByteCountMax + 1))
        }
    }
}
