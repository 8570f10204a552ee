internal import CCurl
import Foundation
import SecureCrypto

// Every libcurl call of the project is in this file (CCurl's shim holds only typed forwarders, because
// curl_easy_setopt and curl_easy_getinfo are variadic). The client pins the clearing's TLS key: no
// certificate authority is consulted, and a key that does not match ends the connection after the handshake,
// before a byte of the request is sent (docs/CLEARING.md §1.3).

/// A failed request: a stable code, libcurl's own code name (`CURLE_SSL_PINNEDPUBKEYNOTMATCH`) so a person can
/// look it up, and a sentence.
public struct HTTPClientError: CodedError {
    /// Stable codes.
    public enum Code: CaseNameCode, FailureCode {
        /// The server's TLS key is not the pinned one: someone else answered, or the clearing changed its key.
        case pinMismatch
        /// The connection could not be made or broke (name, refused, reset, TLS handshake).
        case connectionFailed
        /// The request took longer than its timeout.
        case timedOut
        /// The response is over the client's size limit.
        case responseTooLarge
        /// The URL or the pin is malformed, or plain HTTP was asked for with a pin.
        case badRequest
        /// Any other libcurl failure; `curlCodeName` says which.
        case transferFailed

        /// A wrong key is refused like a signature that does not verify; the rest are failures.
        public var kind: FailureKind {
            switch self {
            case .pinMismatch: .badSignature
            case .badRequest: .usage
            case .connectionFailed, .timedOut, .responseTooLarge, .transferFailed: .failure
            }
        }
    }

    /// The stable code.
    public let code: Code
    /// libcurl's name of its return code, when libcurl failed.
    public let curlCodeName: String?
    /// A sentence a person can act on.
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String, curlCodeName: String? = nil) {
        self.code = code
        self.message = message
        self.curlCodeName = curlCodeName
    }

    /// The message, with libcurl's code name.
    public var description: String {
        guard let curlCodeName else { return message }
        return "\(message) [\(curlCodeName)]"
    }

    /// The code's kind.
    public var kind: FailureKind { code.kind }
}

/// A whole HTTP response.
public struct HTTPClientResponse: Sendable, Equatable {
    /// The status code.
    public let status: Int
    /// The Content-Type header, if the server sent one.
    public let contentType: String?
    /// The body.
    public let body: [UInt8]
}

/// An HTTP(S) client of one server, on libcurl. One request at a time per client (its handle is not shared
/// between threads); make one client per thread.
public final class HTTPClient {
    private let handle: UnsafeMutableRawPointer
    private let baseURL: String
    private let pin: String?
    /// The largest response body kept; a larger one fails with `responseTooLarge`.
    public let responseSizeMax: Int
    /// The longest a whole request may take, connection included.
    public let timeoutSeconds: Int
    /// The longest a connection may take to open (TCP and TLS).
    public let connectTimeoutSeconds: Int

    /// A response larger than this is refused by default: the largest answer of docs/CLEARING.md §3.3 is a list
    /// page (4096 increments with a signed head), well under it.
    public static let responseSizeMaxDefault = 16 << 20
    /// The default whole-request timeout: a claim waits up to 2 s for its batch, a chunk is at most 4 MiB.
    public static let timeoutSecondsDefault = 60
    /// The default connection timeout.
    public static let connectTimeoutSecondsDefault = 10

    /// A client of `baseURL` ("https://clearing.example:8443"; paths are appended). With `pinnedKeyDigest`
    /// (SHA-256 of the server's DER SubjectPublicKeyInfo, 32 bytes) the URL must be https and only that key is
    /// accepted, with no certificate authority; without it the URL must be plain http (tests, a loopback proxy).
    public init(
        baseURL: String, pinnedKeyDigest: [UInt8]?, timeoutSeconds: Int = timeoutSecondsDefault,
        connectTimeoutSeconds: Int = connectTimeoutSecondsDefault, responseSizeMax: Int = responseSizeMaxDefault
    ) throws {
        precondition(timeoutSeconds > 0 && connectTimeoutSeconds > 0 && responseSizeMax > 0)
        let lowered = baseURL.lowercased()
        if let digest = pinnedKeyDigest {
            guard digest.count == 32 else {
                throw HTTPClientError(.badRequest, "a pinned key digest is 32 bytes (SHA-256), not \(digest.count)")
            }
            guard lowered.hasPrefix("https://") else {
                throw HTTPClientError(.badRequest, "a pinned key needs an https:// URL, not \(baseURL)")
            }
            pin = "sha256//" + Data(digest).base64EncodedString()
        } else {
            guard lowered.hasPrefix("http://") else {
                throw HTTPClientError(
                    .badRequest, "an https:// URL needs the server's pinned key digest; none was given for \(baseURL)")
            }
            pin = nil
        }
        guard Self.globalInit == CURLE_OK.rawValue else {
            throw HTTPClientError(
                .transferFailed, "libcurl could not initialize", curlCodeName: Self.name(Self.globalInit))
        }
        guard let made = curl_easy_init() else {
            throw HTTPClientError(.transferFailed, "libcurl could not make a handle")
        }
        handle = made
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.timeoutSeconds = timeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.responseSizeMax = responseSizeMax
    }

    deinit { curl_easy_cleanup(handle) }

    /// GET `path` (with its query), e.g. "/v1/health".
    public func get(_ path: String) throws -> HTTPClientResponse {
        try perform(path, body: nil, contentType: nil)
    }

    /// POST `body` to `path`.
    public func post(
        _ path: String, body: [UInt8], contentType: String = "application/octet-stream"
    ) throws -> HTTPClientResponse {
        try perform(path, body: body, contentType: contentType)
    }

    /// curl_global_init, once per process, before any handle (libcurl asks for it before threads use it).
    private static let globalInit: UInt32 = curl_global_init(Int(CURL_GLOBAL_DEFAULT)).rawValue

    private func perform(_ path: String, body: [UInt8]?, contentType: String?) throws -> HTTPClientResponse {
        precondition(path.hasPrefix("/"), "a path starts with /")
        curl_easy_reset(handle)
        let received = ReceivedBody(limit: responseSizeMax)
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        try set(CURLOPT_URL, baseURL + path)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_PROXY, "") // never an environment's proxy: the pin is for the clearing itself
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_TIMEOUT_MS, timeoutSeconds * 1000)
        try set(CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutSeconds * 1000)
        try setOffset(CURLOPT_MAXFILESIZE_LARGE, curl_off_t(responseSizeMax))
        if let pin {
            // The pinned key replaces the certificate authorities: libcurl checks it after the handshake,
            // whatever VERIFYPEER says, and fails with CURLE_SSL_PINNEDPUBKEYNOTMATCH before sending the request.
            try set(CURLOPT_PINNEDPUBLICKEY, pin)
            try set(CURLOPT_SSL_VERIFYPEER, 0)
            try set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let body {
            try set(CURLOPT_POST, 1)
            try setOffset(CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            headers = curl_slist_append(headers, "Content-Type: \(contentType ?? "application/octet-stream")")
            // No "Expect: 100-continue" round trip: the server answers an over-limit length at once anyway.
            headers = curl_slist_append(headers, "Expect:")
            guard headers != nil else { throw HTTPClientError(.transferFailed, "libcurl could not list the headers") }
            try check(secure_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeRawPointer(headers)), "HTTPHEADER")
        } else {
            try set(CURLOPT_HTTPGET, 1)
        }
        try check(secure_curl_setopt_write(handle, writeBody), "WRITEFUNCTION")
        let code: CURLcode = try withExtendedLifetime(received) {
            try check(
                secure_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(received).toOpaque()),
                "WRITEDATA")
            guard let body else { return curl_easy_perform(handle) }
            // COPYPOSTFIELDS copies the body into the handle, so it need not outlive this call.
            return try body.withUnsafeBytes { raw in
                try check(
                    secure_curl_setopt_pointer(
                        handle, CURLOPT_COPYPOSTFIELDS, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)),
                    "COPYPOSTFIELDS")
                return curl_easy_perform(handle)
            }
        }
        if received.overLimit || code == CURLE_FILESIZE_EXCEEDED {
            throw HTTPClientError(
                .responseTooLarge, "the response from \(baseURL)\(path) is over \(responseSizeMax) bytes",
                curlCodeName: Self.name(code.rawValue))
        }
        guard code == CURLE_OK else { throw failure(code, path) }
        var status = 0
        try check(secure_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status), "RESPONSE_CODE")
        var type: UnsafeMutablePointer<CChar>?
        try check(secure_curl_getinfo_pointer(handle, CURLINFO_CONTENT_TYPE, &type), "CONTENT_TYPE")
        return HTTPClientResponse(status: status, contentType: type.map { String(cString: $0) }, body: received.body)
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(secure_curl_setopt_long(handle, option, value), "\(option)")
    }

    private func setOffset(_ option: CURLoption, _ value: curl_off_t) throws {
        try check(secure_curl_setopt_offset(handle, option, value), "\(option)")
    }

    /// Sets a string option; libcurl copies strings given to curl_easy_setopt (7.17 and later).
    private func set(_ option: CURLoption, _ value: String) throws {
        try value.withCString { try check(secure_curl_setopt_pointer(handle, option, $0), "\(option)") }
    }

    private func check(_ code: CURLcode, _ what: String) throws {
        guard code == CURLE_OK else {
            throw HTTPClientError(
                .transferFailed, "libcurl refused option \(what): \(Self.text(code))",
                curlCodeName: Self.name(code.rawValue))
        }
    }

    private func failure(_ code: CURLcode, _ path: String) -> HTTPClientError {
        let name = Self.name(code.rawValue)
        let target = baseURL + path
        switch code {
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return HTTPClientError(
                .pinMismatch, "the server at \(baseURL) has another TLS key than the pinned one; nothing was sent",
                curlCodeName: name)
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPClientError(
                .timedOut, "\(target) did not answer within \(timeoutSeconds) s", curlCodeName: name)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_SEND_ERROR,
            CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PEER_FAILED_VERIFICATION:
            return HTTPClientError(
                .connectionFailed, "cannot reach \(target): \(Self.text(code))", curlCodeName: name)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_FUNCTION_ARGUMENT:
            return HTTPClientError(.badRequest, "\(target): \(Self.text(code))", curlCodeName: name)
        default:
            return HTTPClientError(.transferFailed, "\(target): \(Self.text(code))", curlCodeName: name)
        }
    }

    private static func text(_ code: CURLcode) -> String {
        curl_easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)"
    }

    /// libcurl's C name of a return code (curl.h's CURLcode, 7.88), "CURLE_<number>" past the list.
    static func name(_ code: UInt32) -> String {
        Int(code) < curlCodeNames.count ? String(curlCodeNames[Int(code)]) : "CURLE_\(code)"
    }

    /// CURLcode's names by value, as curl.h lists them (0 to 99 in 7.88).
    private static let curlCodeNames = """
        CURLE_OK CURLE_UNSUPPORTED_PROTOCOL CURLE_FAILED_INIT CURLE_URL_MALFORMAT CURLE_NOT_BUILT_IN
        CURLE_COULDNT_RESOLVE_PROXY CURLE_COULDNT_RESOLVE_HOST CURLE_COULDNT_CONNECT CURLE_WEIRD_SERVER_REPLY
        CURLE_REMOTE_ACCESS_DENIED CURLE_FTP_ACCEPT_FAILED CURLE_FTP_WEIRD_PASS_REPLY CURLE_FTP_ACCEPT_TIMEOUT
        CURLE_FTP_WEIRD_PASV_REPLY CURLE_FTP_WEIRD_227_FORMAT CURLE_FTP_CANT_GET_HOST CURLE_HTTP2
        CURLE_FTP_COULDNT_SET_TYPE CURLE_PARTIAL_FILE CURLE_FTP_COULDNT_RETR_FILE CURLE_OBSOLETE20
        CURLE_QUOTE_ERROR CURLE_HTTP_RETURNED_ERROR CURLE_WRITE_ERROR CURLE_OBSOLETE24 CURLE_UPLOAD_FAILED
        CURLE_READ_ERROR CURLE_OUT_OF_MEMORY CURLE_OPERATION_TIMEDOUT CURLE_OBSOLETE29 CURLE_FTP_PORT_FAILED
        CURLE_FTP_COULDNT_USE_REST CURLE_OBSOLETE32 CURLE_RANGE_ERROR CURLE_HTTP_POST_ERROR
        CURLE_SSL_CONNECT_ERROR CURLE_BAD_DOWNLOAD_RESUME CURLE_FILE_COULDNT_READ_FILE CURLE_LDAP_CANNOT_BIND
        CURLE_LDAP_SEARCH_FAILED CURLE_OBSOLETE40 CURLE_FUNCTION_NOT_FOUND CURLE_ABORTED_BY_CALLBACK
        CURLE_BAD_FUNCTION_ARGUMENT CURLE_OBSOLETE44 CURLE_INTERFACE_FAILED CURLE_OBSOLETE46
        CURLE_TOO_MANY_REDIRECTS CURLE_UNKNOWN_OPTION CURLE_SETOPT_OPTION_SYNTAX CURLE_OBSOLETE50
        CURLE_OBSOLETE51 CURLE_GOT_NOTHING CURLE_SSL_ENGINE_NOTFOUND CURLE_SSL_ENGINE_SETFAILED
        CURLE_SEND_ERROR CURLE_RECV_ERROR CURLE_OBSOLETE57 CURLE_SSL_CERTPROBLEM CURLE_SSL_CIPHER
        CURLE_PEER_FAILED_VERIFICATION CURLE_BAD_CONTENT_ENCODING CURLE_OBSOLETE62 CURLE_FILESIZE_EXCEEDED
        CURLE_USE_SSL_FAILED CURLE_SEND_FAIL_REWIND CURLE_SSL_ENGINE_INITFAILED CURLE_LOGIN_DENIED
        CURLE_TFTP_NOTFOUND CURLE_TFTP_PERM CURLE_REMOTE_DISK_FULL CURLE_TFTP_ILLEGAL CURLE_TFTP_UNKNOWNID
        CURLE_REMOTE_FILE_EXISTS CURLE_TFTP_NOSUCHUSER CURLE_OBSOLETE75 CURLE_OBSOLETE76
        CURLE_SSL_CACERT_BADFILE CURLE_REMOTE_FILE_NOT_FOUND CURLE_SSH CURLE_SSL_SHUTDOWN_FAILED CURLE_AGAIN
        CURLE_SSL_CRL_BADFILE CURLE_SSL_ISSUER_ERROR CURLE_FTP_PRET_FAILED CURLE_RTSP_CSEQ_ERROR
        CURLE_RTSP_SESSION_ERROR CURLE_FTP_BAD_FILE_LIST CURLE_CHUNK_FAILED CURLE_NO_CONNECTION_AVAILABLE
        CURLE_SSL_PINNEDPUBKEYNOTMATCH CURLE_SSL_INVALIDCERTSTATUS CURLE_HTTP2_STREAM CURLE_RECURSIVE_API_CALL
        CURLE_AUTH_ERROR CURLE_HTTP3 CURLE_QUIC_CONNECT_ERROR CURLE_PROXY CURLE_SSL_CLIENTCERT
        CURLE_UNRECOVERABLE_POLL
        """.split(whereSeparator: \.isWhitespace)
}

/// What the write callback fills; its limit is checked before a byte is kept. Only the performing thread
/// touches it.
private final class ReceivedBody {
    let limit: Int
    var body: [UInt8] = []
    var overLimit = false
    init(limit: Int) { self.limit = limit }
}

/// CURLOPT_WRITEFUNCTION: keeps the response body up to the limit; returning less than it was given makes
/// libcurl stop with CURLE_WRITE_ERROR, which `perform` reports as `responseTooLarge`.
private let writeBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, closure in
    guard let closure else { return 0 }
    let received = Unmanaged<ReceivedBody>.fromOpaque(closure).takeUnretainedValue()
    let length = size * count
    guard received.body.count + length <= received.limit else {
        received.overLimit = true
        return 0
    }
    if let data, length > 0 {
        data.withMemoryRebound(to: UInt8.self, capacity: length) {
            received.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
        }
    }
    return length
}
