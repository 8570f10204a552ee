import Foundation
import SecureCore
import SecureCrypto

/// A refused or failed sync: the clearing's JSON error (code and sentence), or what went wrong before it.
public struct ClearingClientError: CodedError {
    /// Stable codes.
    public enum Code: CaseNameCode, FailureCode {
        /// The clearing does not admit this wallet (HTTP 403, `not-admitted`).
        case notAdmitted
        /// A check failed (HTTP 422 `refused`): nothing of the sync was kept.
        case refused
        /// The clearing found and kept evidence against this wallet (HTTP 422 `evidence`).
        case evidence
        /// Another sync of this wallet runs, or the base moved (HTTP 409): sync again.
        case conflict
        /// Any other status, or an answer that does not decode.
        case badAnswer
        /// The URL is not one this client may use (plain http off loopback, or without the flag).
        case badURL

        /// Evidence is a proof against the wallet; the others are refusals or failures.
        public var kind: FailureKind {
            switch self {
            case .evidence: .integrity
            case .notAdmitted, .refused, .conflict: .refused
            case .badAnswer: .failure
            case .badURL: .usage
            }
        }
    }

    /// The stable code.
    public let code: Code
    /// The clearing's own error code (`refused`, `evidence`, `busy`…), when it sent one.
    public let serverCode: String?
    /// A sentence a person can act on.
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String, serverCode: String? = nil) {
        self.code = code
        self.message = message
        self.serverCode = serverCode
    }

    /// The message.
    public var description: String { message }
    /// The code's kind.
    public var kind: FailureKind { code.kind }
}

/// The wallet's side of the HTTP API of docs/CLEARING.md §3.3: one client of one issuer's clearing, pinned to
/// the TLS key its delegation names.
public final class ClearingClient {
    private let http: HTTPClient

    /// A client of the clearing at `url`. An https URL is pinned to `tlsKeyDigest` (the delegation's
    /// `tlsKeyDigest`) and trusts no certificate authority. A plain http URL is accepted only with
    /// `insecureLoopback` and only for a loopback host (127.0.0.1, [::1], localhost): tests.
    public init(url: String, tlsKeyDigest: Digest32, insecureLoopback: Bool = false) throws {
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") {
            guard insecureLoopback else {
                throw ClearingClientError(
                    .badURL, "\(url) is plain http: a clearing is reached over https, pinned to its TLS key")
            }
            guard Self.isLoopback(lowered) else {
                throw ClearingClientError(.badURL, "--insecure-loopback allows plain http only to a loopback host")
            }
            http = try HTTPClient(baseURL: url, pinnedKeyDigest: nil)
        } else {
            guard lowered.hasPrefix("https://") else {
                throw ClearingClientError(.badURL, "\(url) is not an https:// URL")
            }
            http = try HTTPClient(baseURL: url, pinnedKeyDigest: tlsKeyDigest.bytes)
        }
    }

    private static func isLoopback(_ url: String) -> Bool {
        let rest = url.dropFirst("http://".count)
        return ["127.0.0.1", "localhost", "[::1]"].contains { host in
            rest.hasPrefix(host) && (rest.count == host.count || [":", "/"].contains(rest.dropFirst(host.count).first))
        }
    }

    /// `GET /v1/wallets/{id}/sync`: the size the clearing cosigned of `wallet` (0 before its first sync), or
    /// nil when the clearing never admitted it (403).
    public func base(of wallet: WalletID) throws -> UInt64? {
        let response = try http.get("/v1/wallets/\(wallet.hex)/sync")
        if response.status == 403 { return nil }
        try Self.expect(response, 200, what: "the sync base")
        guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let size = (object["cosignedSize"] as? NSNumber)?.uint64Value
        else { throw ClearingClientError(.badAnswer, "the clearing's sync base has no cosignedSize") }
        return size
    }

    /// `GET /v1/evidence/{digest}`: the evidence the clearing keeps under `digest`, checked to hash to it (what
    /// it proves is for `ForkEvidence.verify`, offline).
    public func evidence(_ digest: EvidenceDigest) throws -> [UInt8] {
        let response = try http.get("/v1/evidence/\(digest.hex)")
        try Self.expect(response, 200, what: "the evidence \(digest.hex)")
        guard EvidenceDigest(of: response.body) == digest else {
            throw ClearingClientError(.badAnswer, "the clearing's evidence does not hash to \(digest.hex)")
        }
        return response.body
    }

    /// `POST /v1/wallets/{id}/admission`.
    public func admit(_ request: AdmissionRequest) throws {
        let response = try http.post("/v1/wallets/\(request.log.walletID.hex)/admission", body: request.encoded)
        try Self.expect(response, 201, what: "the admission")
    }

    /// `POST /v1/wallets/{id}/chunks`, one chunk.
    public func send(_ chunk: SyncChunk) throws {
        let response = try http.post("/v1/wallets/\(chunk.walletID.hex)/chunks", body: chunk.encoded)
        try Self.expect(response, 202, what: "a chunk from position \(chunk.firstPosition)")
    }

    /// `POST /v1/wallets/{id}/claim?list=V`: closes the sync; the answer carries the cosignature and the list
    /// increments after `listVersion`.
    public func claim(_ close: SyncClose, wallet: WalletID, listVersion: UInt64) throws -> SyncAnswer {
        let response = try http.post("/v1/wallets/\(wallet.hex)/claim?list=\(listVersion)", body: close.encoded)
        try Self.expect(response, 200, what: "the claim")
        do {
            guard let answer = try SyncAnswer.decode(response.body) else {
                throw ClearingClientError(.badAnswer, "the clearing's answer is truncated")
            }
            return answer
        } catch let error as FormatError {
            throw ClearingClientError(.badAnswer, "the clearing's answer does not decode: \(error)")
        }
    }

    /// The whole request sequence of one sync: the base (an admission first when the clearing does not know
    /// the wallet, made by `admission`), the chunks built by `upload` from that base, the claim. Returns the
    /// base, what was sent and the answer.
    public func sync<Upload>(
        wallet: WalletID, listVersion: UInt64, admission: () throws -> AdmissionRequest,
        upload: (UInt64) throws -> Upload, parts: (Upload) -> (chunks: [SyncChunk], close: SyncClose)
    ) throws -> (admitted: Bool, upload: Upload, answer: SyncAnswer) {
        var admitted = false
        var base = try self.base(of: wallet)
        if base == nil {
            try admit(try admission())
            admitted = true
            base = try self.base(of: wallet)
        }
        guard let base else {
            throw ClearingClientError(.notAdmitted, "the clearing admitted this wallet but does not know it after")
        }
        let made = try upload(base)
        let (chunks, close) = parts(made)
        for chunk in chunks { try send(chunk) }
        return (admitted, made, try claim(close, wallet: wallet, listVersion: listVersion))
    }

    /// Throws the clearing's error when `response` is not `status`.
    static func expect(_ response: HTTPClientResponse, _ status: Int, what: String) throws {
        guard response.status != status else { return }
        let (serverCode, message) = errorBody(response.body)
        let said = message.map { ": \($0)" } ?? ""
        let code: ClearingClientError.Code =
            switch (response.status, serverCode) {
            case (403, _): .notAdmitted
            case (409, _): .conflict
            case (422, "evidence"): .evidence
            case (422, _): .refused
            default: .badAnswer
            }
        let named = serverCode.map { " (\($0))" } ?? ""
        throw ClearingClientError(
            code, "the clearing answered \(what) with HTTP \(response.status)\(named)\(said)", serverCode: serverCode)
    }

    /// The code and message of a JSON error body `{"error": {"code", "message"}}`, when it is one.
    static func errorBody(_ body: [UInt8]) -> (code: String?, message: String?) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.prefix(65_536))) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return (nil, nil) }
        return (error["code"] as? String, error["message"] as? String)
    }
}
