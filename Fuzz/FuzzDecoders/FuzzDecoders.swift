import Foundation
import SecureCrypto
import SecureTestSupport

// Internals: KeyEventLog.decode(from:) and the ByteReader. scripts/fuzz builds with -enable-testing.
@testable import SecureCore
@testable import SecureStore
@testable import SecureToken
@testable import SecureWallet

/// Every decoder that reads outside bytes, in one libFuzzer binary (docs/FUZZING.md). The first input byte
/// picks the decoder (modulo the count); the rest is its input. Signed statements are re-signed with fixed
/// test keys after the mutation, so that the real checks behind the signature run on fuzzed payloads, and
/// what those checks accept is applied to the ledger's state (`LedgerState.apply`) and then appended to a real
/// SQLCipher ledger (`LedgerStore.append`, the store step).
enum Selector: UInt8, CaseIterable {
    case transfer, receipt, refusal, voucher, checkpoint, signedCheckpoint, envelope, walletCard, walletCardText
    case keyEvent, keyEventLog, forkEvidence, auditBundle, peerMessage, wrappedKeyFile, rangingLine, pkcs11URI
    case moneyText, settings, ledgerEntry, peerRecords, contactMessage, contactRecord, rehearsalFile
    // The clearing's request decoders (docs/CLEARING.md §3.4); a decoded chunk runs the first-sync checks.
    case syncChunk, syncClaim, admissionRequest, walletSyncState
    case clearingListIncrement, clearingSettlement, clearingCosignature
}

/// Fixed private scalars: the keys, and so every seed and corpus input that names them, are the same in
/// every run. Test keys only; nothing else ever uses them.
private func scalar(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: 0, count: 31) + [byte] }

/// The parties of one honest payment: an issuer, a payer funded by it, a payee that trusts it, the honest
/// transfer, and the payee's and payer's ledgers at the moment each evaluates a statement.
struct Fixture {
    let issuer: SoftwareSigner
    let issuerLog: KeyEventLog
    var payer: SoftwareWallet
    var payee: SoftwareWallet
    let transfer: SignedTransfer
    let receipt: SignedReceipt
    let refusal: SignedRefusal
    let voucher: SignedVoucher
    let policy: TransferPolicy
    let payerStateAfterDebit: LedgerState
    let forkCheckpoint: SignedCheckpoint

    init() throws {
        issuer = try SoftwareSigner(privateKey: scalar(1))
        issuerLog = try SoftwareWallet.issuerLog(of: issuer)
        payer = try SoftwareWallet(
            seed: 1, keys: (try SoftwareSigner(privateKey: scalar(2)), try SoftwareSigner(privateKey: scalar(3))))
        payee = try SoftwareWallet(
            seed: 2, keys: (try SoftwareSigner(privateKey: scalar(4)), try SoftwareSigner(privateKey: scalar(5))))
        let euros = try Money(minorUnits: 10_000, currency: .eur)
        try payer.deposit(euros, issuer: issuer)
        voucher = try SoftwareWallet.voucher(
            euros, to: payee.walletID, issuer: issuer, id: VoucherID(bytes: [UInt8](repeating: 7, count: 16))!
        ).0
        // A fork: the same payer's ledger, at the same size with another payment, signed by the same key.
        var fork = payer
        _ = try fork.pay(payee.walletID, amount: try Money(minorUnits: 1_300, currency: .eur))
        forkCheckpoint = try fork.checkpoint()
        transfer = try payer.pay(payee.walletID, amount: try Money(minorUnits: 1_250, currency: .eur))
        payerStateAfterDebit = payer.state
        policy = TransferPolicy(trustedIssuers: [issuerLog.walletID], acceptsWithoutProximity: true)
        let verdict = TransferCheck.evaluate(
            transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state, policy: policy)
        guard case .accept(let draft) = verdict else { preconditionFailure("the honest transfer is refused") }
        var credited = payee
        let credit = try credited.append(draft)
        receipt = try Receipt(
            for: transfer, payeeKey: payee.key, keyDate: credited.keyDate, creditPosition: credit.position
        ).sign(with: payee.signer)
        refusal = try payee.refusal(of: transfer, reason: .debitMismatch)
    }

    /// A first sync of the payer to its issuer's clearing: the chunk, the claim, the admission request, the
    /// accepted state, and type 7 evidence of the same history.
    func clearingSeeds() throws -> [(Selector, [UInt8])] {
        let issuerID = issuerLog.walletID
        let (entries, map) = try SyncEntry.make(payer.entries, issuer: issuerID, sentTransfer: { _ in transfer })
        let session = SyncSessionID(bytes: [UInt8](repeating: 9, count: 16))!
        let chunk = SyncChunk.chunks(
            walletID: payer.walletID, session: session, entries: entries, keyEvents: payer.log.events,
            peerLogs: [payee.walletID: payee.log])[0]
        let checkpoint = try payer.checkpoint()
        let claim = try SyncClaim(
            walletID: payer.walletID, walletKey: payer.key, keyDate: KeyDate(checkpoint: checkpoint.checkpoint),
            issuer: issuerID, fromSize: 0, toSize: checkpoint.checkpoint.size, opaqueMapDigest: map.digest,
            session: session
        ).sign(with: payer.signer)
        let admission = AdmissionRequest(
            log: payer.log, checkpoint: checkpoint, entry: payer.entries[1], proof: payer.tree.inclusionProof(index: 1))
        var sync = WalletSync(first: payer.walletID, issuer: issuerID, knownLog: { [issuerLog] _ in issuerLog })
        _ = sync.accept(chunk)
        var seeds: [(Selector, [UInt8])] = [
            (.syncChunk, chunk.encoded), (.syncClaim, claim.encoded), (.admissionRequest, admission.encoded),
        ]
        if case .accepted(let acceptance) = sync.close(
            claim: claim, checkpoint: checkpoint, consistencyProof: [], opaqueMap: map)
        {
            seeds.append((.walletSyncState, acceptance.state.encoded))
        }
        let mismatch = ReplayMismatch(
            checkpoint: checkpoint, entries: entries, claims: [ClaimedMap(claim: claim, map: map)],
            issuerLogs: [issuerLog.events], peerLogs: [PeerLog(payee.log)], sentTransfers: [transfer],
            assetIssuer: issuerID)
        seeds.append((.forkEvidence, ForkEvidence(.replayMismatch(mismatch), log: payer.log).encoded))
        return seeds
    }

    /// The clearing's encodings (docs/PROTOCOL.md, "Clearing records, lists and cosignatures"), signed by the
    /// issuer's fixed key standing in for the clearing key.
    static func clearingSeeds(issuer: SoftwareSigner) throws -> [(Selector, [UInt8])] {
        let wallet = WalletID(bytes: [UInt8](repeating: 0xA1, count: 32))!
        let zeros = Digest32(bytes: [UInt8](repeating: 0, count: 32))!
        let increment = ListIncrement.add(wallet: wallet, grounds: .unsynced, evidence: zeros)
        let settlement = try ClearingSettlement(
            issuer: wallet, wallet: wallet, listingVersion: 1, grounds: .inconsistent, groundsDigest: zeros,
            note: "case 1")
        var batch = CosignatureBatch()
        batch.add(CosignatureLeaf(wallet: wallet, checkpointDigest: zeros, size: 3, syncedAt: 0), now: 0)
        batch.add(
            CosignatureLeaf(
                wallet: WalletID(bytes: [UInt8](repeating: 0xB2, count: 32))!,
                checkpointDigest: zeros, size: 4, syncedAt: 0), now: 0)
        let cosignatures =
            try batch.close(
                issuer: wallet, delegationSequence: 1, batch: 1, time: 0, list: ListHead.empty.appending(increment),
                signer: issuer) ?? []
        return [
            (.clearingListIncrement, increment.encoded),
            (.clearingListIncrement, ListIncrement.remove(wallet: wallet, grounds: .proven, settlement: zeros).encoded),
            (.clearingSettlement, try settlement.sign(with: issuer).encoded),
        ] + cosignatures.map { (.clearingCosignature, $0.encoded) }
    }

    /// A rehearsal file that uses every directive (docs/TILL.md §4.2), so mutations reach each one's checks.
    static let rehearsalSeed = """
        # every directive once
        rehearsal 1
        plays till
        ending too-far
        amount 4.50 EUR
        countdown 90s
        balance 20.00 EUR
        budget groceries 10.00 EUR hard
        category groceries
        pin this wrong from 2
        pin other locked
        distance this 400mm 410mm
        distance other 1400mm
        delay receipt 250ms
        fault token removed other at credit
        expect-payee other
        contact Corner Shop

        """

    /// One honest input per selector: the fuzzer starts from valid encodings rather than from nothing.
    func seeds() throws -> [(Selector, [UInt8])] {
        var seeds: [(Selector, [UInt8])] = [
            (.transfer, transfer.payload.encoded), (.receipt, receipt.payload.encoded),
            (.refusal, refusal.payload.encoded), (.voucher, voucher.payload.encoded),
            (.checkpoint, transfer.payload.checkpoint.checkpoint.encoded),
            (.signedCheckpoint, transfer.payload.checkpoint.encoded),
            (.envelope, Envelope(transfer, payerLog: payer.log).encoded),
            (.envelope, Envelope(voucher, issuerLog: issuerLog).encoded),
            (.envelope, Envelope(receipt, payeeLog: payee.log).encoded),
            (.walletCard, WalletCard(log: payer.log).encoded),
            (.walletCardText, Array(WalletCard(log: payer.log).text.utf8)),
            (.keyEvent, payer.log.events[0].encoded),
            (.keyEventLog, ByteWriter.bytes { payer.log.encode(into: &$0) }),
            (.rangingLine, Array("1234\n2 m\n0.5\n".utf8)),
            (.pkcs11URI, Array("pkcs11:token=Wallet;object=key?pin-source=file:/tmp/pin".utf8)),
            (.moneyText, Array("12.50 EUR".utf8)),
            (.ledgerEntry, payer.entries.last!.encoded),
            (.auditBundle, try auditBundle()),
            (
                .forkEvidence,
                ForkEvidence(
                    .conflictingCheckpoints(try payer.checkpoint(), forkCheckpoint), log: payer.log
                ).encoded
            ),
        ]
        seeds += [
            (.peerMessage, PeerMessage.keyEvents(.request(walletID: payer.walletID, from: 0)).encoded),
            (
                .peerMessage,
                PeerMessage.keyEvents(KeyEventsMessage.page(of: payer.log.events, walletID: payer.walletID, from: 0)!)
                    .encoded
            ),
            (.settings, SettingsChange.issuerTrust(.trust(issuerLog.walletID, head: issuerLog.head)).payload),
            (.settings, SettingsChange.anchorKind(.file).payload),
            (.settings, SettingsChange.tokenAllowance(.unenforcedPIN, allowed: true).payload),
        ]
        seeds += try clearingSeeds()
        seeds.append((.wrappedKeyFile, WrappedKeyFile.magic + [WrappedKeyFile.version, 0, 0]))
        let card = ContactCard(
            log: payer.log, contactKey: payer.contactKey.publicKey, trustedIssuers: [issuerLog.walletID])
        seeds += [
            (.contactMessage, ContactMessage.card(card).encoded),
            (
                .contactMessage,
                ContactMessage.gate(
                    ContactGate(
                        nonceContribution: NonceContribution(exactly: [UInt8](repeating: 7, count: 16)),
                        source: .external, medianMillimetres: 150, allowsSimulated: false)
                ).encoded
            ),
            (.contactMessage, ContactMessage.failure(ContactFailure(reason: .declined)).encoded),
            (
                .contactRecord,
                try ContactRecord(
                    walletID: payer.walletID, log: payer.log, contactKey: card.contactKey.rawRepresentation,
                    name: "Bob",
                    addedAt: 1_700_000_000_000, verification: .verified, rangingSource: .external,
                    medianMillimetres: 150, trustedIssuers: [issuerLog.walletID]
                ).encoded
            ),
            (.rehearsalFile, Array(Self.rehearsalSeed.utf8)),
        ]
        seeds += try Self.clearingSeeds(issuer: issuer)
        return seeds
    }

    /// The payer's whole ledger as an audit bundle (`AuditBundleFile`'s JSON), as `secure audit export`
    /// writes one: every entry with its inclusion proof, and the checkpoint of the whole ledger.
    func auditBundle() throws -> [UInt8] {
        let size = payer.state.size
        func proven(_ entry: LedgerEntry) -> (String, [String]) {
            (Hex.encode(entry.encoded), payer.tree.inclusionProof(index: entry.position, size: size).map(\.hex))
        }
        let checkpoint = Hex.encode(try payer.checkpoint().encoded)
        let events = payer.log.events.enumerated().map { sequence, event in
            AuditBundleFile.EventJSON(
                sequence: UInt64(sequence), event: Hex.encode(event.encoded), entry: proven(payer.entries[0]).0,
                proof: proven(payer.entries[0]).1)
        }
        let document = AuditBundleFile.Document(
            format: AuditBundleFile.format, walletID: payer.walletID.hex,
            publicKeys: payer.log.events.enumerated().map { sequence, event in
                AuditBundleFile.KeyJSON(
                    sequence: UInt64(sequence), spki: Hex.encode(event.event.signingKey.spki),
                    fingerprint: Hex.encode(event.event.signingKey.fingerprint))
            },
            keyEvents: events, from: 0, to: size,
            entries: payer.entries.map {
                AuditBundleFile.ProvenJSON(position: $0.position, entry: proven($0).0, proof: proven($0).1)
            },
            rangeCheckpoint: checkpoint, latestCheckpoint: checkpoint, consistencyProof: [],
            statementSources: AuditBundleFile.SourcesJSON(
                trustedIssuers: [issuerLog.walletID.hex], peerKeyEvents: [],
                sentTransfers: [Hex.encode(transfer.encoded)]))
        return Array(try JSONEncoder().encode(document))
    }
}

/// The store step: a real SQLCipher ledger that starts with a wallet's entries and takes every entry the
/// checks accepted and its state applied, appended after the ones it already holds, each with a checkpoint
/// signed by the wallet's fixed key in the append's transaction, as `Wallet.append` does. It lives in
/// /dev/shm where there is one, so the fuzzer is not bound by fsync, and is removed at exit.
final class StoreStep {
    let directory: String
    let store: LedgerStore
    let wallet: SoftwareWallet
    private(set) var state = LedgerState()
    private var peaks = MerkleCompactRange()
    private var counter: UInt64 = 0

    init(_ wallet: SoftwareWallet, name: String) throws {
        self.wallet = wallet
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        directory = "\(base)/secure-fuzz-\(getpid())-\(name)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try LedgerStore.create(
            path: directory + "/ledger.db", key: SecretBytes(randomCount: 32), walletID: wallet.walletID)
        for entry in wallet.entries { try append(entry) }
    }

    private func append(_ entry: LedgerEntry) throws {
        let next = try state.applying(entry)
        var nextPeaks = peaks
        nextPeaks.append(leafHash: Merkle.leafHash(entry.encoded))
        let wallet = self.wallet
        try store.append([entry], treePeaks: nextPeaks) { index in
            let checkpoint = try Checkpoint(
                walletID: wallet.walletID, walletKey: wallet.key, keySequence: wallet.log.current.sequence,
                keyEventPosition: wallet.log.current.ledgerPosition, state: next, root: nextPeaks.root,
                time: entry.time, index: index.after)
            return LedgerStore.Seal(checkpoint: try checkpoint.sign(with: wallet.signer).encoded)
        }
        state = next
        peaks = nextPeaks
    }

    /// Appends what a check accepted at the store's next position; true when the store committed it.
    func take(_ draft: EntryDraft) -> Bool {
        counter += 1
        var id = [UInt8](repeating: 0, count: 8)
        withUnsafeBytes(of: counter.bigEndian) { id += $0 }
        guard
            let entry = try? draft.entry(
                position: state.size, id: StatementID(bytes: id)!, time: max(state.lastTime, SoftwareWallet.startTime),
                previousLink: state.head)
        else { return false }
        return (try? append(entry)) != nil
    }
}

nonisolated(unsafe) private var fixture: Fixture = try! Fixture()
/// The payee's ledger (accept, deposit) and the payer's after its debit (applyRefusal), on SQLCipher.
nonisolated(unsafe) private var payeeStore = try! StoreStep(fixture.payee, name: "payee")
nonisolated(unsafe) private var payerStore = try! StoreStep(fixture.payer, name: "payer")
/// How often each selector's checks accepted a statement and the ledger applied it (the store step).
nonisolated(unsafe) private var applied = [Int](repeating: 0, count: Selector.allCases.count)
nonisolated(unsafe) private var runs = [Int](repeating: 0, count: Selector.allCases.count)
/// SECURE_FUZZ_SELECTOR=NAME runs that decoder alone, whatever the first byte says (a long run per target).
private let forced: Selector? = ProcessInfo.processInfo.environment["SECURE_FUZZ_SELECTOR"].map {
    name in
    guard let selector = Selector.allCases.first(where: { "\($0)" == name }) else {
        fatalError("SECURE_FUZZ_SELECTOR: no selector \(name) (\(Selector.allCases.map { "\($0)" }))")
    }
    return selector
}

/// Writes the seeds into $SECURE_FUZZ_SEEDS (scripts/fuzz points it at the corpus) and, at exit, prints
/// the runs and store steps per selector.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutableRawPointer) -> Int32 {
    if let directory = ProcessInfo.processInfo.environment["SECURE_FUZZ_SEEDS"] {
        for (number, (selector, body)) in try! fixture.seeds().enumerated() where forced == nil || forced == selector {
            let path = "\(directory)/seed-\(selector)-\(number)"
            _ = FileManager.default.createFile(atPath: path, contents: Data([selector.rawValue] + body))
        }
    }
    atexit {
        for step in [payeeStore, payerStore] { try? FileManager.default.removeItem(atPath: step.directory) }
        var lines = "FuzzDecoders selector runs (store steps):"
        for selector in Selector.allCases {
            lines += " \(selector)=\(runs[Int(selector.rawValue)])"
            if applied[Int(selector.rawValue)] > 0 { lines += "(\(applied[Int(selector.rawValue)]))" }
        }
        FileHandle.standardError.write(Data((lines + "\n").utf8))
    }
    return 0
}

/// libFuzzer entry. A decoder may return nil or throw on any input; it must never trap, and what the
/// checks accept must apply to the ledger or be refused by it with an error, never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoders(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let selector = forced ?? Selector(rawValue: bytes[0] % UInt8(Selector.allCases.count))!
    let body = Array(bytes.dropFirst())
    runs[Int(selector.rawValue)] += 1
    if run(selector, body) { applied[Int(selector.rawValue)] += 1 }
    return 0
}

/// Runs one selector; true when a ledger applied what the checks accepted.
private func run(_ selector: Selector, _ body: [UInt8]) -> Bool {
    switch selector {
    case .transfer: return (try? transfer(body)) ?? false
    case .receipt: receipt(body)
    case .refusal: return (try? refusal(body)) ?? false
    case .voucher: return (try? voucher(body)) ?? false
    case .checkpoint: checkpoint(body)
    case .signedCheckpoint:
        if let signed = try? SignedCheckpoint.decode(body) { _ = fixture.payer.log.check(signed) }
    case .envelope: envelope(body)
    case .walletCard: _ = try? WalletCard.decode(body)
    case .walletCardText: _ = try? WalletCard.parse(String(decoding: body, as: UTF8.self))
    case .keyEvent:
        _ = try? KeyEvent.decode(body)
        if let event = try? SignedKeyEvent.decode(body) { _ = fixture.payer.log.refusal(of: event) }
    case .keyEventLog:
        var reader = ByteReader(body)
        if let log = try? KeyEventLog.decode(from: &reader) {
            var follower = fixture.payer.log
            _ = follower.follow(Array(log.events.dropFirst()))
        }
    case .forkEvidence: if let evidence = try? ForkEvidence.decode(body) { _ = evidence.verify() }
    case .auditBundle: _ = try? AuditBundleFile.verify(body)
    case .peerMessage: _ = try? PeerMessage.decode(body)
    case .wrappedKeyFile: _ = try? WrappedKeyFile(encoded: body)
    case .rangingLine:
        _ = try? ExternalRangingParser.parse(lineBytes: body)
        _ = try? ExternalRangingParser.parse(text: String(decoding: body, as: UTF8.self))
    case .pkcs11URI:
        if let uri = try? PKCS11URI(String(decoding: body, as: UTF8.self)) { _ = try? PINSource(uri: uri) }
    case .moneyText: _ = try? MoneyText.parse(String(decoding: body, as: UTF8.self))
    case .settings:
        _ = try? SettingsChange.decode(payload: body)
        _ = try? IssuerTrustChange.decode(body)
        _ = try? BudgetChange.decode(payload: body, category: "food")
    case .ledgerEntry:
        if let entry = try? LedgerEntry.decode(body) { _ = try? fixture.payer.state.applying(entry) }
    case .peerRecords:
        _ = try? ReadyRecord.decode(body)
        _ = try? Measurement.decode(body)
        _ = try? SpatialProof.decode(body)
        _ = try? SignedTransfer.decode(body)
        _ = try? SignedReceipt.decode(body)
        _ = try? SignedRefusal.decode(body)
        _ = try? SignedVoucher.decode(body)
    case .contactMessage: _ = try? ContactMessage.decode(body)
    case .contactRecord: _ = try? ContactRecord.decode(body)
    case .rehearsalFile: _ = try? RehearsalFile.parse(body, name: "fuzz")
    case .syncChunk:
        if let chunk = try? SyncChunk.decode(body) {
            var sync = WalletSync(
                first: chunk.walletID, issuer: fixture.issuerLog.walletID, knownLog: { _ in fixture.issuerLog })
            _ = sync.accept(chunk)
        }
    case .syncClaim: if let claim = try? SignedSyncClaim.decode(body) { _ = claim.isSignatureValid }
    case .admissionRequest:
        if let request = try? AdmissionRequest.decode(body) {
            let sources = StatementSources(
                walletID: request.log.walletID, trustedIssuers: [fixture.issuerLog.walletID],
                peerLog: { _ in fixture.issuerLog }, sentTransfer: { _ in nil })
            _ = request.problem(issuer: fixture.issuerLog.walletID, sources: sources)
        }
    case .walletSyncState: _ = try? WalletSyncState.decode(body)
    case .clearingListIncrement: _ = try? ListIncrement.decode(body)
    case .clearingSettlement:
        if let signed = (try? SignedClearingSettlement.decode(body)) ?? nil {
            _ = signed.isValid(signedBy: fixture.issuer.publicKey)
        }
    case .clearingCosignature:
        if let cosignature = (try? Cosignature.decode(body)) ?? nil {
            _ = cosignature.problem(clearingKey: fixture.issuer.publicKey, issuer: fixture.issuerLog.walletID)
        }
    }
    return false
}

/// Applies a draft at the ledger's next position, as the wallet's append does.
private func apply(_ draft: EntryDraft, to state: LedgerState) -> Bool {
    guard
        let entry = try? draft.entry(
            position: state.size, id: StatementID(bytes: [UInt8](repeating: 9, count: 16))!,
            time: SoftwareWallet.startTime + 86_400_000, previousLink: state.head)
    else { return false }
    return (try? state.applying(entry)) != nil
}

/// The draft a verdict records, if any.
private func draft(of verdict: StatementVerdict) -> EntryDraft? {
    switch verdict {
    case .accept(let draft), .conflict(let draft), .refuse(_, let draft): draft
    case .duplicate, .policyRefusal, .drop: nil
    }
}

/// accept: a fuzzed transfer payload, its checkpoint re-signed by the payer's fixed key when it names that
/// key, the whole re-signed, checked by the payee and credited to the payee's ledger.
private func transfer(_ body: [UInt8]) throws -> Bool {
    guard let decoded = try Transfer.decode(body) else { return false }
    let signer = fixture.payer.signer
    guard decoded.order.payerKey == signer.publicKey else { return false }
    var checkpoint = decoded.checkpoint
    if checkpoint.checkpoint.walletKey == signer.publicKey { checkpoint = try checkpoint.checkpoint.sign(with: signer) }
    let signed = try Transfer(
        order: decoded.order, checkpoint: checkpoint, debitLeaf: decoded.debitLeaf,
        inclusionProof: decoded.inclusionProof
    ).sign(with: signer)
    precondition(signed.isSignatureValid, "a re-signed transfer verifies")
    let verdict = TransferCheck.evaluate(
        signed, walletID: fixture.payee.walletID, payerLog: fixture.payer.log, state: fixture.payee.state,
        policy: fixture.policy)
    guard let draft = draft(of: verdict) else { return false }
    return apply(draft, to: fixture.payee.state) && payeeStore.take(draft)
}

/// A fuzzed receipt of the honest transfer, re-signed by the payee's fixed key.
private func receipt(_ body: [UInt8]) {
    guard let decoded = try? Receipt.decode(body), decoded.answer.payeeKey == fixture.payee.key,
        let signed = try? decoded.sign(with: fixture.payee.signer)
    else { return }
    _ = ReceiptCheck.evaluate(signed, of: fixture.transfer, payeeLog: fixture.payee.log)
}

/// applyRefusal: a fuzzed refusal of the honest transfer, re-signed by the payee's fixed key, checked by
/// the payer and applied (the reversal) to the payer's ledger after its debit.
private func refusal(_ body: [UInt8]) throws -> Bool {
    guard let decoded = try Refusal.decode(body), decoded.answer.payeeKey == fixture.payee.key else { return false }
    let signed = try decoded.sign(with: fixture.payee.signer)
    let verdict = RefusalCheck.evaluate(
        signed, of: fixture.transfer, payeeLog: fixture.payee.log, state: fixture.payerStateAfterDebit)
    guard let draft = draft(of: verdict) else { return false }
    return apply(draft, to: fixture.payerStateAfterDebit) && payerStore.take(draft)
}

/// deposit: a fuzzed voucher, re-signed by the issuer's fixed key, checked by the payee (who trusts that
/// issuer) and deposited into the payee's ledger.
private func voucher(_ body: [UInt8]) throws -> Bool {
    guard let decoded = try Voucher.decode(body), decoded.issuerKey == fixture.issuer.publicKey else { return false }
    let signed = try decoded.sign(with: fixture.issuer)
    let verdict = VoucherCheck.evaluate(
        signed, issuerLog: fixture.issuerLog, walletID: fixture.payee.walletID,
        trustedIssuers: [fixture.issuerLog.walletID], state: fixture.payee.state)
    guard let draft = draft(of: verdict) else { return false }
    return apply(draft, to: fixture.payee.state) && payeeStore.take(draft)
}

/// A fuzzed checkpoint, re-signed by the payer's fixed key, judged by the payer's log.
private func checkpoint(_ body: [UInt8]) {
    guard let decoded = try? Checkpoint.decode(body), decoded.walletKey == fixture.payer.key,
        let signed = try? decoded.sign(with: fixture.payer.signer)
    else { return }
    _ = fixture.payer.log.check(signed)
}

/// An envelope, and the statement inside it as its kind says.
private func envelope(_ body: [UInt8]) {
    guard let envelope = try? Envelope.decode(body) else { return }
    switch envelope.kind {
    case .transfer: _ = try? SignedTransfer.decode(envelope.statement)
    case .receipt: _ = try? SignedReceipt.decode(envelope.statement)
    case .refusal: _ = try? SignedRefusal.decode(envelope.statement)
    case .voucher: _ = try? SignedVoucher.decode(envelope.statement)
    }
}
