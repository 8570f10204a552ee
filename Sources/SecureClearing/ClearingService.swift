import Foundation
import SecureCore
import SecureCrypto

/// The codes of `ClearingServiceError`.
public enum ClearingServiceErrorCode: CaseNameCode, FailureCode {
    /// The store or the clearing key's token did not answer; the client retries.
    case unavailable
    /// The clearing key given is not the one the issuer's log delegates in force.
    case wrongClearingKey

    /// A wrong key is the operator's to fix; the rest are failures.
    public var kind: FailureKind {
        switch self {
        case .wrongClearingKey: .usage
        case .unavailable: .failure
        }
    }
}

/// The clearing service could not do something that is not a client's fault.
public typealias ClearingServiceError = CodedFailure<ClearingServiceErrorCode>

/// The service's limits and periods (docs/CLEARING.md §3.3, §3.4). The defaults are the documented ones;
/// tests shorten them.
public struct ClearingServiceConfiguration: Sendable {
    /// A wallet unsynced this long is listed unsynced (docs/CLEARING.md §2.9; `--unsynced-after`).
    public var unsyncedAfterMilliseconds: Int64 = ClearingLimits.unsyncedAfterMillisecondsDefault
    /// A sync session's chunks are kept this long after the last one arrived: an hour covers a slow upload
    /// of the largest sync; an abandoned one costs storage no longer.
    public var sessionMilliseconds: Int64 = 3_600_000
    /// Chunks in one session: 256 × 4 MiB bounds a sync at 1 GiB, the per-wallet daily quota.
    public var sessionChunkCountMax: Int = 256
    /// Requests per wallet per day (§3.3): a wallet syncs a few times a day; 600 leaves room for retries.
    public var walletRequestsPerDayMax: Int64 = 600
    /// Bytes per wallet per day (§3.3).
    public var walletBytesPerDayMax: Int64 = 1 << 30
    /// Requests per client address per hour (§3.3): a NAT of many wallets, each syncing a few times a day.
    public var addressRequestsPerHourMax: Int64 = 6000
    /// How often the batcher's thread publishes listings.
    public var sweepMilliseconds: Int64 = 5000

    /// The documented defaults.
    public init() {}
}

/// The clearing's HTTP routes (docs/CLEARING.md §3.3, docs/PROTOCOL.md "Clearing HTTP API") over one
/// `Clearing`, its store and the process's batcher. Every error is the one JSON shape of `HTTPResponse.error`.
public final class ClearingService<Store: ClearingServiceStore>: @unchecked Sendable {
    /// The formats of the JSON bodies.
    public static var infoFormat: String { "secure-clearing-info-v1" }
    public static var syncFormat: String { "secure-clearing-sync-v1" }
    public static var chunkFormat: String { "secure-clearing-chunk-v1" }
    public static var listsFormat: String { "secure-clearing-lists-v1" }
    public static var admissionFormat: String { "secure-clearing-admission-v1" }

    /// The clearing's rules over the store.
    public let clearing: Clearing<Store>
    /// The process's batcher (started by `init`, stopped by `stop`).
    public let batcher: ClearingBatcher<Store>
    private let clearingKey: P256.PublicKey
    private let delegationSequence: UInt64
    private let configuration: ClearingServiceConfiguration
    private let now: @Sendable () -> Int64
    private let health: (@Sendable () -> HTTPResponse)?

    /// A service for `clearing`, signing heads with `signer`, which must hold the clearing key the issuer's log
    /// delegates in force (else `wrongClearingKey`). `now` is Unix ms; `health` answers `GET /v1/health` (404
    /// when nil). Starts the batcher's thread.
    public init(
        clearing: Clearing<Store>, signer: MessageSigner, configuration: ClearingServiceConfiguration = .init(),
        now: @escaping @Sendable () -> Int64 = ClearingClock.unixMilliseconds,
        health: (@Sendable () -> HTTPResponse)? = nil
    ) throws {
        let log = try clearing.currentIssuerLog()
        guard let event = log.events.last(where: { $0.event.clearing != nil })?.event,
            let delegation = event.clearing
        else {
            throw ClearingServiceError(
                .wrongClearingKey, "the issuer's key-event log delegates no clearing (secure issuer delegate-clearing)")
        }
        guard delegation.clearingKey == signer.publicKey else {
            throw ClearingServiceError(
                .wrongClearingKey,
                "the clearing key given is not the one the issuer's log delegates in force (key event "
                    + "\(event.sequence)); give the key `secure issuer show` names")
        }
        self.clearing = clearing
        clearingKey = delegation.clearingKey
        delegationSequence = event.sequence
        self.configuration = configuration
        self.now = now
        self.health = health
        let book = clearing.book
        let unsyncedAfter = configuration.unsyncedAfterMilliseconds
        batcher = ClearingBatcher(
            store: clearing.store,
            identity: .init(issuer: clearing.issuer, delegationSequence: event.sequence), signer: signer,
            sweepMilliseconds: configuration.sweepMilliseconds, now: now,
            sweep: { _ = try? book.publishListings(now: now(), unsyncedAfter: unsyncedAfter) })
        batcher.start()
    }

    /// Stops the batcher (after it closes the batch being filled).
    public func stop() { batcher.stop() }

    /// Answers one request; never throws: a store or token failure is 503 `unavailable`.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[0] == "", parts[1] == "v1" else { return notFound(request) }
        do {
            if let refusal = try quota(request, wallet: nil) { return refusal }
            let route = Array(parts.dropFirst(2))
            guard let (name, argument) = Self.route(route) else { return notFound(request) }
            switch (request.method, name) {
            case ("GET", "health"): return health?() ?? notFound(request)
            case ("GET", "clearing"): return try info()
            case ("POST", "admission"): return try withWallet(argument, request) { try admission($0, request) }
            case ("GET", "sync"): return try withWallet(argument, request) { try syncBase($0) }
            case ("POST", "chunks"): return try withWallet(argument, request) { try chunk($0, request) }
            case ("POST", "claim"): return try withWallet(argument, request) { try claim($0, request) }
            case ("GET", "lists"): return try lists(argument, request)
            case ("GET", "evidence"): return try evidence(argument)
            default:
                return .error(
                    status: 405, code: "method-not-allowed", message: "\(request.path) does not take \(request.method)")
            }
        } catch let error as ClearingServiceError where error.code == .unavailable {
            return .error(status: 503, code: "unavailable", message: error.message)
        } catch {
            return .error(
                status: 503, code: "unavailable", message: "the clearing's store or key is unavailable; retry")
        }
    }

    /// The body limit of each route, for `HTTPServerConfiguration.bodyLimit`.
    public static func bodyLimit(method: String, path: String) -> Int {
        ClearingRoutes.bodyLimit(method: method, path: path)
    }

    /// The route's name and its one path argument ("" when none), or nil for no route.
    private static func route(_ parts: [String]) -> (String, String)? {
        switch parts.count {
        case 1 where parts[0] == "health" || parts[0] == "clearing": return (parts[0], "")
        case 2 where parts[0] == "lists" || parts[0] == "evidence": return (parts[0], parts[1])
        case 3 where parts[0] == "wallets" && ["admission", "sync", "chunks", "claim"].contains(parts[2]):
            return (parts[2], parts[1])
        default: return nil
        }
    }

    private func notFound(_ request: HTTPRequest) -> HTTPResponse {
        .error(status: 404, code: "not-found", message: "no such resource: \(request.method) \(request.path)")
    }

    private static func malformed(_ message: String) -> HTTPResponse {
        .error(status: 400, code: "malformed", message: message)
    }

    private static func octets(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/octet-stream", body: body)
    }

    /// Parses the path's wallet id and counts the request against the wallet's quota.
    private func withWallet(_ text: String, _ request: HTTPRequest, _ body: (WalletID) throws -> HTTPResponse)
        throws -> HTTPResponse
    {
        guard let wallet = WalletID(hex: text) else {
            return Self.malformed("\(text) is not a wallet id (64 lowercase hex digits)")
        }
        // A read needs no signature, so anyone could spend a wallet's daily quota with it: reads count against
        // the client's address only (found by an attack: 600 GETs locked a wallet out of syncing for a day).
        if let refusal = try quota(request, wallet: request.method == "GET" ? nil : wallet) { return refusal }
        return try body(wallet)
    }

    /// Counts the request for its client address (per hour) or, with `wallet`, for the wallet (per day); the
    /// 429 answer when over.
    private func quota(_ request: HTTPRequest, wallet: WalletID?) throws -> HTTPResponse? {
        let time = now()
        let bytes = Int64(request.body.count)
        if let wallet {
            let day: Int64 = 86_400_000
            let counted = try clearing.store.countRequest(
                subject: "wallet:" + wallet.hex, windowStart: time - time % day, bytes: bytes)
            guard counted.requests <= configuration.walletRequestsPerDayMax,
                counted.bytes <= configuration.walletBytesPerDayMax
            else {
                return .error(
                    status: 429, code: "quota",
                    message: "wallet \(wallet.hex) is over its daily quota of \(configuration.walletRequestsPerDayMax) "
                        + "requests and \(configuration.walletBytesPerDayMax) bytes; retry tomorrow")
            }
            return nil
        }
        let hour: Int64 = 3_600_000
        let counted = try clearing.store.countRequest(
            subject: "address:" + request.clientAddress, windowStart: time - time % hour, bytes: bytes)
        guard counted.requests <= configuration.addressRequestsPerHourMax else {
            return .error(
                status: 429, code: "quota",
                message: "this address is over its quota of \(configuration.addressRequestsPerHourMax) requests an "
                    + "hour; retry later")
        }
        return nil
    }

    private func info() throws -> HTTPResponse {
        let head = try clearing.store.listHead()
        var object: [String: Any] = [
            "format": Self.infoFormat, "issuer": clearing.issuer.hex, "delegationSequence": delegationSequence,
            "clearingKey": Hex.encode(clearingKey.x963),
            "list": ["version": head.version, "digest": head.digest.hex],
        ]
        if let signed = batcher.latestSignedHead { object["signedHead"] = Hex.encode(signed.encoded) }
        return .json(status: 200, object)
    }

    private func admission(_ wallet: WalletID, _ request: HTTPRequest) throws -> HTTPResponse {
        let decoded: AdmissionRequest?
        do {
            decoded = try AdmissionRequest.decode(request.body)
        } catch {
            return Self.malformed("the admission request does not decode: \(error)")
        }
        guard let admission = decoded else { return Self.malformed("the admission request is truncated") }
        guard admission.log.walletID == wallet else {
            return Self.malformed("the admission request's log is not of wallet \(wallet.hex)")
        }
        switch try clearing.admit(admission, now: now()) {
        case .admitted:
            return .json(status: 201, ["format": Self.admissionFormat, "wallet": wallet.hex, "admitted": true])
        case .refused(let reason):
            return .error(status: 403, code: "not-admitted", message: reason)
        }
    }

    private func notAdmitted(_ wallet: WalletID) -> HTTPResponse {
        .error(
            status: 403, code: "not-admitted",
            message: "wallet \(wallet.hex) was never admitted; POST its admission request first")
    }

    private func syncBase(_ wallet: WalletID) throws -> HTTPResponse {
        guard let base = try clearing.base(of: wallet) else { return notAdmitted(wallet) }
        var object: [String: Any] = ["format": Self.syncFormat, "wallet": wallet.hex, "cosignedSize": base]
        if let cosignature = try clearing.store.latestCosignature(wallet: wallet) {
            object["cosignature"] = Hex.encode(cosignature.encoded)
        }
        return .json(status: 200, object)
    }

    private func chunk(_ wallet: WalletID, _ request: HTTPRequest) throws -> HTTPResponse {
        let decoded: SyncChunk?
        do {
            decoded = try SyncChunk.decode(request.body)
        } catch {
            return Self.malformed("the sync chunk does not decode: \(error)")
        }
        guard let chunk = decoded else { return Self.malformed("the sync chunk is truncated") }
        guard chunk.walletID == wallet else { return Self.malformed("the chunk is not of wallet \(wallet.hex)") }
        guard let base = try clearing.base(of: wallet) else { return notAdmitted(wallet) }
        let held = try clearing.store.chunks(wallet: wallet, session: chunk.session)
        var expected = base
        for bytes in held {
            // The store keeps only chunks this route accepted, so each decodes.
            guard let earlier = try? SyncChunk.decode(bytes) else {
                throw ClearingServiceError(.unavailable, "a kept chunk of the session does not decode")
            }
            if earlier.firstPosition == chunk.firstPosition, bytes == request.body {
                return chunkAccepted(wallet, next: chunk.firstPosition + UInt64(chunk.entries.count))
            }
            expected = earlier.firstPosition + UInt64(earlier.entries.count)
        }
        guard chunk.firstPosition == expected else {
            return .error(
                status: 409, code: "wrong-base",
                message: "the chunk starts at \(chunk.firstPosition); this session continues at \(expected)")
        }
        guard held.count < configuration.sessionChunkCountMax else {
            return .error(
                status: 413, code: "too-large",
                message:
                    "a sync session holds at most \(configuration.sessionChunkCountMax) chunks; claim and sync again")
        }
        let next = chunk.firstPosition + UInt64(chunk.entries.count)
        switch try clearing.store.putChunk(
            wallet: wallet, session: chunk.session, firstPosition: chunk.firstPosition, encoded: request.body,
            expiresAt: now() + configuration.sessionMilliseconds)
        {
        case .inserted, .existedEqual:
            return chunkAccepted(wallet, next: next)
        case .existedDifferent:
            return .error(
                status: 409, code: "wrong-base",
                message: "another chunk at position \(chunk.firstPosition) of this session was kept first")
        }
    }

    private func chunkAccepted(_ wallet: WalletID, next: UInt64) -> HTTPResponse {
        .json(status: 202, ["format": Self.chunkFormat, "wallet": wallet.hex, "nextPosition": next])
    }

    private func claim(_ wallet: WalletID, _ request: HTTPRequest) throws -> HTTPResponse {
        let since: UInt64
        switch request.queryValue("list") {
        case nil: since = 0
        case let text?:
            guard let value = UInt64(text) else { return Self.malformed("list=\(text) is not a list version") }
            since = value
        }
        let decoded: SyncClose?
        do {
            decoded = try SyncClose.decode(request.body)
        } catch {
            return Self.malformed("the sync close request does not decode: \(error)")
        }
        guard let close = decoded else { return Self.malformed("the sync close request is truncated") }
        guard close.claim.payload.walletID == wallet else {
            return Self.malformed("the claim is not of wallet \(wallet.hex)")
        }
        let session = close.claim.payload.session
        let chunks = try clearing.store.chunks(wallet: wallet, session: session).compactMap {
            try? SyncChunk.decode($0)
        }
        let completion = try clearing.sync(wallet: wallet, chunks: chunks, close: close, now: now())
        try clearing.store.deleteChunks(wallet: wallet, session: session)
        switch completion {
        case .accepted(let leaf, _):
            let cosignature = try batcher.cosign(leaf)
            let headVersion = cosignature.head.head.list.version
            var increments: [ListIncrement] = []
            // A `list=` past the head asks for nothing (and `since + 1` must not overflow: an attack found it).
            let held = min(since, headVersion)
            if held < headVersion {
                increments = Array(
                    try clearing.store.listIncrements(from: held + 1).prefix(
                        min(Int(headVersion - held), ClearingLimits.syncAnswerIncrementCountMax)))
            }
            return Self.octets(
                200, SyncAnswer(cosignature: cosignature, increments: increments, fromVersion: held + 1).encoded)
        case .refused(let refusal):
            return .json(
                status: 422,
                [
                    "format": HTTPResponse.errorFormat,
                    "error": ["code": "refused", "reason": refusal.code.rawValue, "message": refusal.reason],
                ])
        case .evidence(let digest):
            _ = try? clearing.book.publishListings(now: now(), unsyncedAfter: configuration.unsyncedAfterMilliseconds)
            return .json(
                status: 422,
                [
                    "format": HTTPResponse.errorFormat,
                    "error": [
                        "code": "evidence", "digest": digest.hex,
                        "message": "the sync proves a fork of this wallet's history; the evidence is kept as "
                            + digest.hex,
                    ],
                ])
        case .superseded:
            return .error(
                status: 409, code: "superseded",
                message: "another sync of this wallet completed first; sync again from its new cosigned size")
        case .notAdmitted:
            return notAdmitted(wallet)
        }
    }

    private func lists(_ issuer: String, _ request: HTTPRequest) throws -> HTTPResponse {
        guard let id = WalletID(hex: issuer) else { return Self.malformed("\(issuer) is not an issuer id") }
        guard id == clearing.issuer else {
            return .error(
                status: 404, code: "not-found", message: "this clearing keeps the list of \(clearing.issuer.hex) only")
        }
        let since: UInt64
        switch request.queryValue("since") {
        case nil: since = 0
        case let text?:
            guard let value = UInt64(text) else { return Self.malformed("since=\(text) is not a list version") }
            since = value
        }
        let head = try clearing.store.listHead()
        // A `since` past the head asks for nothing (and `since + 1` must not overflow: an attack found it).
        let held = min(since, head.version)
        let increments =
            held < head.version
            ? Array(
                try clearing.store.listIncrements(from: held + 1).prefix(ClearingLimits.syncAnswerIncrementCountMax))
            : []
        var object: [String: Any] = [
            "format": Self.listsFormat, "issuer": id.hex, "fromVersion": held + 1,
            "increments": increments.map { Hex.encode($0.encoded) },
            "list": ["version": head.version, "digest": head.digest.hex],
        ]
        if let signed = batcher.latestSignedHead { object["signedHead"] = Hex.encode(signed.encoded) }
        return .json(status: 200, object)
    }

    private func evidence(_ text: String) throws -> HTTPResponse {
        guard let digest = EvidenceDigest(hex: text) else {
            return Self.malformed("\(text) is not an evidence digest (64 lowercase hex digits)")
        }
        guard let record = try clearing.store.evidence(digest: digest) else {
            return .error(status: 404, code: "not-found", message: "no evidence \(text) is kept")
        }
        return Self.octets(200, record.evidence.encoded)
    }
}

/// The routes' body limits, the same for every store.
public enum ClearingRoutes {
    /// An admission request is a key-event log (at most a few hundred events), a checkpoint, one entry and its
    /// proof: 256 KiB (docs/CLEARING.md §3.3).
    public static let admissionByteCountMax = 262_144

    /// The largest body of `method` `path`: admission 256 KiB, chunks `syncChunkByteCountMax`, claim
    /// `syncCloseByteCountMax`, 0 for the routes without a body.
    public static func bodyLimit(method: String, path: String) -> Int {
        guard method == "POST" else { return 0 }
        if path.hasSuffix("/admission") { return admissionByteCountMax }
        if path.hasSuffix("/chunks") { return ClearingLimits.syncChunkByteCountMax }
        if path.hasSuffix("/claim") { return ClearingLimits.syncCloseByteCountMax }
        return 0
    }
}

/// The wall clock in Unix milliseconds.
public enum ClearingClock {
    /// Now, in Unix milliseconds.
    @Sendable public static func unixMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
