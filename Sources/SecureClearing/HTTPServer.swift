internal import CMicroHTTPD
import Foundation
import SecureCrypto

// Every libmicrohttpd call of the project is in this file (the one forwarder CMicroHTTPD's shim holds is there
// only because MHD_get_connection_info is variadic). The server buffers each request's body up to its route's
// limit and only then calls the handler, so a handler never waits on a client: a slow upload holds a
// connection (bounded by the connection limits and the idle timeout), never a database transaction.

/// The codes of `HTTPServerError`.
public enum HTTPServerErrorCode: CaseNameCode, FailureCode {
    /// The listen address does not parse, or plain HTTP was asked for on an address other than loopback.
    case badAddress
    /// The socket could not be made, bound or listened on (the port may be taken).
    case listenFailed
    /// The TLS key or certificate could not be read, or libmicrohttpd has no TLS.
    case tlsUnavailable
    /// libmicrohttpd refused to start (its options or the system's limits).
    case startFailed

    /// Address and file problems are the caller's; the rest are failures.
    public var kind: FailureKind {
        switch self {
        case .badAddress: .usage
        case .listenFailed, .tlsUnavailable, .startFailed: .failure
        }
    }
}

/// The HTTP server could not start.
public typealias HTTPServerError = CodedFailure<HTTPServerErrorCode>

/// The server's settings. The defaults are docs/CLEARING.md §3.1's.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen: "127.0.0.1:8443", "[::1]:8443", "0.0.0.0:443"; port 0 takes a free port.
    public var listen: String
    /// PEM key and certificate for TLS, or nil for plain HTTP, which is allowed on loopback only.
    public var tls: (keyPEM: [UInt8], certificatePEM: [UInt8])?
    /// Threads that serve connections; each runs its own epoll loop.
    public var threadCount: Int = ProcessInfo.processInfo.activeProcessorCount
    /// An idle connection is closed after this long (a slow client holds one connection at most this long
    /// between two bytes).
    public var connectionTimeoutSeconds: Int = 30
    /// Connections open at once, all addresses together.
    public var connectionsMax: Int = 1024
    /// Connections open at once from one address (§3.3, "16 connections per address").
    public var connectionsPerAddressMax: Int = 16
    /// The largest body each request may carry, by method and path; a larger one is answered 413 `too-large`
    /// and never buffered. 0 for routes that take no body.
    public var bodyLimit: @Sendable (_ method: String, _ path: String) -> Int

    /// Settings with §3.1's defaults.
    public init(
        listen: String, tls: (keyPEM: [UInt8], certificatePEM: [UInt8])? = nil,
        bodyLimit: @escaping @Sendable (_ method: String, _ path: String) -> Int
    ) {
        self.listen = listen
        self.tls = tls
        self.bodyLimit = bodyLimit
    }

    /// The most threads a server runs: more than the machine's cores only adds switching.
    public static let threadCountMax = 256
}

/// What a handler does with a whole request; it runs on libmicrohttpd's threads, several at once.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse

/// An HTTP(S) server on libmicrohttpd: internal epoll threads, whole bodies, one handler.
public final class HTTPServer: @unchecked Sendable {
    // The daemon is written once in init and read by stop/deinit, which run after the threads are stopped.
    private var daemon: OpaquePointer?
    private let context: Unmanaged<ServerContext>
    private let lock = NSLock()
    /// The port the server listens on (the one the system chose for port 0).
    public let port: Int
    /// Whether the server speaks TLS.
    public let usesTLS: Bool

    /// Binds the address and starts serving at once; `stop()` or deinit stops it.
    public init(_ configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) throws {
        precondition(
            configuration.threadCount >= 1 && configuration.threadCount <= HTTPServerConfiguration.threadCountMax)
        let address = try ListenAddress(configuration.listen)
        if configuration.tls == nil, !address.isLoopback {
            throw HTTPServerError(
                .badAddress,
                "plain HTTP may listen on loopback only; give a TLS key and certificate to listen on \(configuration.listen)"
            )
        }
        if configuration.tls != nil, MHD_is_feature_supported(.FEATURE_TLS) != .YES {
            throw HTTPServerError(.tlsUnavailable, "this libmicrohttpd was built without TLS")
        }
        let socket = try address.bindAndListen()
        port = socket.port
        usesTLS = configuration.tls != nil
        let box = ServerContext(handler: handler, bodyLimit: configuration.bodyLimit)
        context = Unmanaged.passRetained(box)
        do {
            daemon = try Self.start(configuration, socket: socket.descriptor, ipv6: address.isIPv6, context: context)
        } catch {
            close(socket.descriptor)
            context.release()
            throw error
        }
    }

    /// Stops accepting, waits for the threads to end and closes the listening socket. Idempotent.
    public func stop() {
        lock.withLock {
            guard let running = daemon else { return }
            daemon = nil
            MHD_stop_daemon(running) // returns only once every thread has ended; closes the listen socket
            context.release()
        }
    }

    deinit { stop() }

    private static func start(
        _ configuration: HTTPServerConfiguration, socket: Int32, ipv6: Bool, context: Unmanaged<ServerContext>
    ) throws -> OpaquePointer {
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
        if ipv6 { flags |= MHD_USE_IPv6.rawValue }
        if configuration.tls != nil { flags |= MHD_USE_TLS.rawValue }
        guard MHD_is_feature_supported(.FEATURE_EPOLL) == .YES else {
            throw HTTPServerError(.startFailed, "this libmicrohttpd was built without epoll")
        }
        // The PEM texts must stay alive until MHD_start_daemon returns (it copies them into GnuTLS).
        let key = configuration.tls.map { strdup(String(decoding: $0.keyPEM, as: UTF8.self)) } ?? nil
        let certificate = configuration.tls.map { strdup(String(decoding: $0.certificatePEM, as: UTF8.self)) } ?? nil
        defer {
            free(key)
            free(certificate)
        }
        var options: [MHD_OptionItem] = [
            item(.LISTEN_SOCKET, Int(socket)),
            item(.THREAD_POOL_SIZE, configuration.threadCount),
            item(.CONNECTION_TIMEOUT, configuration.connectionTimeoutSeconds),
            item(.CONNECTION_LIMIT, configuration.connectionsMax),
            item(.PER_IP_CONNECTION_LIMIT, configuration.connectionsPerAddressMax),
            MHD_OptionItem(
                option: .NOTIFY_COMPLETED, value: unsafeBitCast(completed, to: Int.self),
                ptr_value: context.toOpaque()),
        ]
        if let key, let certificate {
            options.append(MHD_OptionItem(option: .HTTPS_MEM_KEY, value: 0, ptr_value: key))
            options.append(MHD_OptionItem(option: .HTTPS_MEM_CERT, value: 0, ptr_value: certificate))
        }
        options.append(item(.END, 0))
        let started: OpaquePointer? = options.withUnsafeMutableBufferPointer { items in
            withVaList([MHD_OPTION.ARRAY.rawValue, items.baseAddress!, MHD_OPTION.END.rawValue]) { arguments in
                MHD_start_daemon_va(flags, 0, nil, nil, access, context.toOpaque(), arguments)
            }
        }
        guard let started else {
            throw HTTPServerError(
                .startFailed,
                "libmicrohttpd refused to start (a TLS key or certificate it cannot read, or a system limit)")
        }
        return started
    }

    private static func item(_ option: MHD_OPTION, _ value: Int) -> MHD_OptionItem {
        MHD_OptionItem(option: option, value: value, ptr_value: nil)
    }
}

/// What the C callbacks reach through their closure pointer.
private final class ServerContext: @unchecked Sendable {
    let handler: HTTPHandler
    let bodyLimit: @Sendable (String, String) -> Int
    init(handler: @escaping HTTPHandler, bodyLimit: @escaping @Sendable (String, String) -> Int) {
        self.handler = handler
        self.bodyLimit = bodyLimit
    }
}

/// One request's state between the access handler's calls; only its connection's thread touches it.
private final class RequestState {
    let limit: Int
    var body: [UInt8] = []
    var tooLarge = false
    var answered = false
    init(limit: Int) { self.limit = limit }
}

/// MHD_AccessHandlerCallback: called once when the headers are in, once per piece of body, and once more at the
/// end (with no data), where the response is queued.
private let access:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
        UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutablePointer<Int>?,
        UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) -> MHD_Result = { closure, connection, url, method, _, uploadData, uploadSize, requestClosure in
        guard let closure, let connection, let url, let method, let uploadSize, let requestClosure else {
            return .NO
        }
        let server = Unmanaged<ServerContext>.fromOpaque(closure).takeUnretainedValue()
        let path = String(cString: url), verb = String(cString: method)
        guard let existing = requestClosure.pointee else {
            let state = RequestState(limit: max(0, server.bodyLimit(verb, path)))
            requestClosure.pointee = Unmanaged.passRetained(state).toOpaque()
            // A declared length over the limit is answered now, before a byte of the body is read.
            let declared = lookup(connection, .HEADER_KIND, "Content-Length").flatMap { Int($0) }
            if let declared, declared > state.limit {
                state.tooLarge = true
                state.answered = true
                return queue(connection, tooLarge(state.limit))
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
        let size = uploadSize.pointee
        if size > 0 {
            // A body over the limit without a declared length (chunked) is read and dropped, never kept, and
            // answered 413 at its end.
            if !state.tooLarge, state.body.count + size <= state.limit, let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                    state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
                }
            } else {
                state.tooLarge = true
                state.body = []
            }
            uploadSize.pointee = 0
            return .YES
        }
        guard !state.answered else { return .YES }
        state.answered = true
        if state.tooLarge { return queue(connection, tooLarge(state.limit)) }
        let request = HTTPRequest(
            method: verb, path: path, query: values(connection, .GET_ARGUMENT_KIND),
            headers: values(connection, .HEADER_KIND), body: state.body,
            clientAddress: clientAddress(connection))
        state.body = []
        return queue(connection, server.handler(request))
    }

/// MHD_RequestCompletedCallback: frees the request's state however the request ended (answered, timed out,
/// closed by the client).
private let completed:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        MHD_RequestTerminationCode
    ) -> Void = { _, _, requestClosure, _ in
        guard let requestClosure, let state = requestClosure.pointee else { return }
        Unmanaged<RequestState>.fromOpaque(state).release()
        requestClosure.pointee = nil
    }

private func tooLarge(_ limit: Int) -> HTTPResponse {
    HTTPResponse.error(
        status: 413, code: "too-large", message: "the request body is over this route's limit of \(limit) bytes")
}

/// Queues a response; .NO (which closes the connection) when libmicrohttpd cannot make or queue it.
private func queue(_ connection: OpaquePointer, _ response: HTTPResponse) -> MHD_Result {
    let made = response.body.withUnsafeBytes { raw in
        MHD_create_response_from_buffer(
            raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
    }
    guard let made else { return .NO }
    defer { MHD_destroy_response(made) }
    guard MHD_add_response_header(made, "Content-Type", response.contentType) == .YES else { return .NO }
    guard (100...599).contains(response.status) else { preconditionFailure("status \(response.status)") }
    return MHD_queue_response(connection, UInt32(response.status), made)
}

private func lookup(_ connection: OpaquePointer, _ kind: MHD_ValueKind, _ name: String) -> String? {
    MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
}

/// Every header or query argument of the request, in order.
private func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(name: String, value: String)] {
    final class Collected { var pairs: [(name: String, value: String)] = [] }
    let collected = Collected()
    let iterator:
        @convention(c) (UnsafeMutableRawPointer?, MHD_ValueKind, UnsafePointer<CChar>?, UnsafePointer<CChar>?) ->
            MHD_Result = { closure, _, key, value in
                guard let closure, let key else { return .YES }
                let collected = Unmanaged<Collected>.fromOpaque(closure).takeUnretainedValue()
                collected.pairs.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return .YES
            }
    // The count it returns is of no use here: the iterator saw each pair.
    _ = withExtendedLifetime(collected) {
        MHD_get_connection_values(connection, kind, iterator, Unmanaged.passUnretained(collected).toOpaque())
    }
    return collected.pairs
}

private func clientAddress(_ connection: OpaquePointer) -> String {
    guard let address = secure_mhd_client_address(connection) else { return "" }
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    let length = socklen_t(
        address.pointee.sa_family == sa_family_t(AF_INET6)
            ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return "" }
    return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A parsed listen address, and the socket made from it (the server owns the socket so that it knows the port
/// the system chose; libmicrohttpd closes it when it stops).
private struct ListenAddress {
    let host: String
    let port: UInt16
    let isIPv6: Bool

    init(_ text: String) throws {
        let bad = HTTPServerError(.badAddress, "the listen address \(text) is not HOST:PORT (IPv6 as [HOST]:PORT)")
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw bad
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var probe4 = in_addr(), probe6 = in6_addr()
        if inet_pton(AF_INET, host, &probe4) == 1 {
            isIPv6 = false
        } else if inet_pton(AF_INET6, host, &probe6) == 1 {
            isIPv6 = true
        } else {
            throw bad
        }
        self.host = host
        self.port = port
    }

    /// 127.0.0.0/8 or ::1.
    var isLoopback: Bool {
        if isIPv6 {
            var address = in6_addr()
            _ = inet_pton(AF_INET6, host, &address)
            var loopback = in6_addr()
            _ = inet_pton(AF_INET6, "::1", &loopback)
            return withUnsafeBytes(of: address) { a in withUnsafeBytes(of: loopback) { b in a.elementsEqual(b) } }
        }
        return host.split(separator: ".").first == "127"
    }

    /// The most connections waiting to be accepted (listen's backlog).
    static let backlogMax: Int32 = 1024

    func bindAndListen() throws -> (descriptor: Int32, port: Int) {
        let family = isIPv6 ? AF_INET6 : AF_INET
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw failure("socket") }
        var yes: Int32 = 1
        guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            defer { close(descriptor) }
            throw failure("setsockopt")
        }
        var storage = sockaddr_storage()
        let length: socklen_t
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            withUnsafeBytes(of: address) { raw in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            withUnsafeBytes(of: address) { raw in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            defer { close(descriptor) }
            throw failure("bind to \(host):\(port)")
        }
        guard listen(descriptor, Self.backlogMax) == 0 else {
            defer { close(descriptor) }
            throw failure("listen")
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &actualLength) }
        }
        guard named == 0 else {
            defer { close(descriptor) }
            throw failure("getsockname")
        }
        let chosen = withUnsafeBytes(of: actual) { raw -> UInt16 in
            // sin_port and sin6_port are both at offset 2, in network order.
            UInt16(raw[2]) << 8 | UInt16(raw[3])
        }
        return (descriptor, Int(chosen))
    }

    private func failure(_ what: String) -> HTTPServerError {
        HTTPServerError(.listenFailed, "\(what) failed: \(String(cString: strerror(errno)))")
    }
}
