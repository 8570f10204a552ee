import Foundation
import SecureClearing
import SecureCore
import SecureCrypto
import SecureSync
import SecureTestSupport
import Testing

/// The clearing's HTTP API (docs/CLEARING.md §3.3) over the in-memory store, served by the real HTTPServer on
/// loopback and called with the wallet's real HTTPClient. Wallets are SoftwareWallets: their uploads are
/// SecureCore's SyncEntry.make / SyncChunk.chunks / SyncClaim, signed by their software keys.
final class ClearingAPIWorld {
    var alice: SoftwareWallet
    var bob: SoftwareWallet
    let issuer: SoftwareSigner
    let clearingSigner: SoftwareSigner
    let issuerLog: KeyEventLog
    var sent: [TransferID: SignedTransfer] = [:]
    let store: LockedInMemoryClearingStore
    let service: ClearingService<LockedInMemoryClearingStore>
    let server: HTTPServer
    let client: HTTPClient

    static func eur(_ cents: Int64) -> Money { try! Money(minorUnits: cents, currency: .eur) }

    init(configuration: ClearingServiceConfiguration = .init()) throws {
        alice = try SoftwareWallet(seed: 71)
        bob = try SoftwareWallet(seed: 1071)
        issuer = try SoftwareSigner()
        clearingSigner = try SoftwareSigner()
        var log = try SoftwareWallet.issuerLog(of: issuer)
        let delegation = try ClearingDelegation(
            clearingKey: clearingSigner.publicKey, clearingKeyOrigin: .modulesWord,
            tlsKeyDigest: Digest32(of: Array("tls".utf8)), url: "https://clearing.example.org/v1")
        try log.append(
            try SignedKeyEvent(
                delegation: .clearingDelegation(
                    after: log.last, issuerKey: issuer.publicKey, clearing: delegation, ledgerPosition: 5),
                issuerSigner: issuer, clearingSigner: clearingSigner))
        issuerLog = log
        store = LockedInMemoryClearingStore(now: ClearingClock.unixMilliseconds)
        service = try ClearingService(
            clearing: Clearing(issuerLog: log, store: store), signer: clearingSigner, configuration: configuration)
        let service = service
        var http = HTTPServerConfiguration(listen: "127.0.0.1:0") { ClearingRoutes.bodyLimit(method: $0, path: $1) }
        http.threadCount = 4
        server = try HTTPServer(http) { service.handle($0) }
        client = try HTTPClient(baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil, timeoutSeconds: 10)
    }

    deinit {
        server.stop()
        service.stop()
    }

    var issuerID: WalletID { issuerLog.walletID }

    /// Alice deposits, sets a budget, pays Bob 40.00 (Bob credits it).
    func firstPart() throws {
        try alice.deposit(Self.eur(10_000), issuer: issuer)
        let budget = try Budget(
            category: "food", limit: Self.eur(5_000), window: .month, isHardCap: false, timeZoneIdentifier: "UTC")
        try alice.append(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.set(budget).payload))
        try pay(4_000)
    }

    /// Bob pays Alice back 15.00.
    func secondPart() throws {
        let back = try bob.pay(alice.walletID, amount: Self.eur(1_500))
        let verdict = TransferCheck.evaluate(
            back, walletID: alice.walletID, payerLog: bob.log, state: alice.state,
            policy: TransferPolicy(trustedIssuers: [issuerID], acceptsWithoutProximity: true))
        _ = try #require(try alice.carryOut(verdict))
    }

    func pay(_ cents: Int64) throws {
        let transfer = try alice.pay(bob.walletID, amount: Self.eur(cents))
        sent[transfer.payload.order.transferID] = transfer
        let verdict = TransferCheck.evaluate(
            transfer, walletID: bob.walletID, payerLog: alice.log, state: bob.state,
            policy: TransferPolicy(trustedIssuers: [issuerID], acceptsWithoutProximity: true))
        _ = try #require(try bob.carryOut(verdict))
    }

    /// Alice's admission request: her log, checkpoint, and her deposit entry (position `position`) with its proof.
    func admission(position: UInt64) throws -> AdmissionRequest {
        AdmissionRequest(
            log: alice.log, checkpoint: try alice.checkpoint(), entry: alice.entries[Int(position)],
            proof: alice.tree.inclusionProof(index: position))
    }

    /// Records the mint of Alice's deposit at `position` as if the issuer had synced its ledger.
    func recordMint(ofDepositAt position: UInt64) throws {
        let extracted = ClearingRecord.extract(
            wallet: alice.walletID, issuer: issuerID, entry: alice.entries[Int(position)], transfer: nil)
        guard case .success(.deposit(let record)?) = extracted else {
            Issue.record("no deposit at \(position): \(extracted)")
            return
        }
        _ = try store.transaction(locking: []) { $0.insertMint(record) }
    }

    /// What Alice sends for the entries from `from` on; `badMap` sends an opaque map other than the one signed.
    func upload(from: UInt64, session: SyncSessionID = .random(), badMap: Bool = false) throws -> (
        chunks: [SyncChunk], close: SyncClose
    ) {
        let sent = sent
        let all = try SyncEntry.make(alice.entries, issuer: issuerID, sentTransfer: { sent[$0] })
        let entries = Array(all.entries.dropFirst(Int(from)))
        let map = OpaqueMap(items: all.map.items.filter { $0.position >= from })
        let chunks = SyncChunk.chunks(
            walletID: alice.walletID, session: session, entries: entries,
            keyEvents: from == 0 ? alice.log.events : [], peerLogs: [bob.walletID: bob.log], entryCountMax: 2)
        let checkpoint = try alice.checkpoint()
        let claim = try SyncClaim(
            walletID: alice.walletID, walletKey: alice.key, keyDate: KeyDate(checkpoint: checkpoint.checkpoint),
            issuer: issuerID, fromSize: from, toSize: checkpoint.checkpoint.size, opaqueMapDigest: map.digest,
            session: session
        ).sign(with: alice.signer)
        let proof = from == 0 ? [] : alice.tree.consistencyProof(oldSize: from)
        let close = SyncClose(
            claim: claim, checkpoint: checkpoint, consistencyProof: proof,
            opaqueMap: badMap ? OpaqueMap(items: [OpaqueMap.Item(position: from, kind: .noMoney)]) : map)
        return (chunks, close)
    }

    func path(_ wallet: WalletID, _ route: String) -> String { "/v1/wallets/\(wallet.hex)/\(route)" }

    /// Posts every chunk (each must be 202) and the claim; the claim's response.
    func sync(_ upload: (chunks: [SyncChunk], close: SyncClose), list: UInt64 = 0) throws -> HTTPClientResponse {
        for chunk in upload.chunks {
            let response = try client.post(path(alice.walletID, "chunks"), body: chunk.encoded)
            #expect(response.status == 202, "chunk at \(chunk.firstPosition): \(text(response))")
        }
        return try client.post(path(alice.walletID, "claim") + "?list=\(list)", body: upload.close.encoded)
    }

    func json(_ response: HTTPClientResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    func errorCode(_ response: HTTPClientResponse) -> String? {
        (json(response)["error"] as? [String: Any])?["code"] as? String
    }

    func text(_ response: HTTPClientResponse) -> String {
        "\(response.status) " + String(decoding: response.body, as: UTF8.self)
    }
}

@Suite("Clearing HTTP API over the in-memory store")
struct ClearingAPITests {
    @Test("admission 403 then 201; a first and a later sync cosigned under the delegated key; 409, 400, 413, 422")
    func syncsOverHTTP() throws {
        let world = try ClearingAPIWorld()
        try world.firstPart()
        let alice = world.alice.walletID

        // Not admitted: the voucher's mint is not in the issuer's synced ledger; nothing is stored.
        let depositPosition = try #require(world.alice.entries.firstIndex { $0.kind == .deposit }).toUInt64
        let request = try world.admission(position: depositPosition)
        let refused = try world.client.post(world.path(alice, "admission"), body: request.encoded)
        #expect(refused.status == 403 && world.errorCode(refused) == "not-admitted", "\(world.text(refused))")
        #expect(try world.store.transaction(locking: []) { $0.isAdmitted(alice) || $0.log(alice) != nil } == false)
        let unknown = try world.client.get(world.path(alice, "sync"))
        #expect(unknown.status == 403 && world.errorCode(unknown) == "not-admitted")

        try world.recordMint(ofDepositAt: depositPosition)
        let admitted = try world.client.post(world.path(alice, "admission"), body: request.encoded)
        #expect(admitted.status == 201, "\(world.text(admitted))")
        let base = try world.client.get(world.path(alice, "sync"))
        #expect(base.status == 200 && (world.json(base)["cosignedSize"] as? Int) == 0, "\(world.text(base))")

        // A first sync: 200 with a cosignature under the delegated clearing key and the issuer id.
        let first = try world.upload(from: 0)
        let answered = try world.sync(first)
        #expect(answered.status == 200, "\(world.text(answered))")
        let answer = try #require(try SyncAnswer.decode(answered.body))
        #expect(
            answer.cosignature.problem(
                clearingKey: world.clearingSigner.publicKey, issuer: world.issuerID,
                checkpoint: first.close.checkpoint.checkpoint) == nil)
        #expect(answer.cosignature.head.head.delegationSequence == 1)
        let size = first.close.checkpoint.checkpoint.size
        let after = try world.client.get(world.path(alice, "sync"))
        #expect((world.json(after)["cosignedSize"] as? Int) == Int(size), "\(world.text(after))")

        // A chunk that does not start at the cosigned size: 409 wrong-base.
        let stale = try world.upload(from: 0)
        let wrong = try world.client.post(world.path(alice, "chunks"), body: stale.chunks[0].encoded)
        #expect(wrong.status == 409 && world.errorCode(wrong) == "wrong-base", "\(world.text(wrong))")
        // Malformed bytes: 400; over the route's limit: 413 before the body is read.
        let malformed = try world.client.post(world.path(alice, "chunks"), body: [0xFF, 1, 2, 3])
        #expect(malformed.status == 400 && world.errorCode(malformed) == "malformed")
        let large = try world.client.post(
            world.path(alice, "admission"), body: [UInt8](repeating: 0, count: ClearingRoutes.admissionByteCountMax + 1)
        )
        #expect(large.status == 413 && world.errorCode(large) == "too-large")

        // A later sync whose opaque map is not the one its claim signs: 422 refused, nothing kept.
        try world.secondPart()
        let bad = try world.upload(from: size, badMap: true)
        let refusedSync = try world.sync(bad)
        #expect(refusedSync.status == 422 && world.errorCode(refusedSync) == "refused", "\(world.text(refusedSync))")
        let still = try world.client.get(world.path(alice, "sync"))
        #expect((world.json(still)["cosignedSize"] as? Int) == Int(size))

        // The honest later sync: cosigned at the new size, in a later batch.
        let later = try world.upload(from: size)
        let laterAnswer = try world.sync(later)
        #expect(laterAnswer.status == 200, "\(world.text(laterAnswer))")
        let second = try #require(try SyncAnswer.decode(laterAnswer.body))
        #expect(
            second.cosignature.problem(
                clearingKey: world.clearingSigner.publicKey, issuer: world.issuerID,
                checkpoint: later.close.checkpoint.checkpoint) == nil)
        #expect(second.cosignature.head.head.batch > answer.cosignature.head.head.batch)
    }

    @Test("lists chain from the empty head; evidence digests that are not kept are 404; an address quota is 429")
    func listsEvidenceAndQuota() throws {
        var configuration = ClearingServiceConfiguration()
        configuration.addressRequestsPerHourMax = 40
        let world = try ClearingAPIWorld(configuration: configuration)
        try world.firstPart()
        let alice = world.alice.walletID
        let depositPosition = try #require(world.alice.entries.firstIndex { $0.kind == .deposit }).toUInt64
        try world.recordMint(ofDepositAt: depositPosition)
        let admitted = try world.client.post(
            world.path(alice, "admission"), body: try world.admission(position: depositPosition).encoded)
        #expect(admitted.status == 201)
        #expect(try world.sync(try world.upload(from: 0)).status == 200)

        // A week later Alice has not synced again: the sweep lists her unsynced.
        let later = ClearingClock.unixMilliseconds() + 8 * 86_400_000
        let published = try world.service.clearing.book.publishListings(
            now: later, unsyncedAfter: ClearingLimits.unsyncedAfterMillisecondsDefault)
        let lists = try world.client.get("/v1/lists/\(world.issuerID.hex)?since=0")
        #expect(lists.status == 200, "\(world.text(lists))")
        let body = world.json(lists)
        let increments = try (body["increments"] as? [String] ?? []).compactMap {
            try ListIncrement.decode(Hex.decode($0) ?? [])
        }
        #expect(increments.count == published.count)
        let head = increments.reduce(ListHead.empty) { $0.appending($1) }
        let list = body["list"] as? [String: Any]
        #expect((list?["version"] as? Int) == Int(head.version))
        #expect((list?["digest"] as? String) == head.digest.hex)
        // A version past the head asks for nothing; the largest one once crashed the service (since + 1).
        let past = try world.client.get("/v1/lists/\(world.issuerID.hex)?since=\(UInt64.max)")
        #expect(past.status == 200 && (world.json(past)["increments"] as? [String])?.isEmpty == true)
        let none = try world.client.get("/v1/evidence/\(EvidenceDigest.random().hex)")
        #expect(none.status == 404 && world.errorCode(none) == "not-found")
        let otherIssuer = try world.client.get("/v1/lists/\(alice.hex)")
        #expect(otherIssuer.status == 404)

        var statuses: [Int] = []
        for _ in 0..<40 { statuses.append(try world.client.get("/v1/clearing").status) }
        #expect(statuses.contains(429), "\(statuses)")
        let last = try world.client.get("/v1/clearing")
        #expect(last.status == 429 && world.errorCode(last) == "quota")
    }
}

extension Int {
    fileprivate var toUInt64: UInt64 { UInt64(self) }
}
