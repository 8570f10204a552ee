import Foundation
import SecureSync
import SecureTestSupport
import Testing

@testable import SecureClearing

/// The HTTP server (libmicrohttpd) and client (libcurl) against each other over loopback: whole bodies, limits,
/// the JSON errors, TLS with a pinned key, and a slow client beside a fast one.
@Suite("HTTP server and client")
struct HTTPTests {
    /// Counts the requests a handler saw, across the server's threads.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    /// A server whose handler echoes the request as "METHOD PATH name=value&…\n" followed by the body.
    static func echoServer(
        tls: (keyPEM: [UInt8], certificatePEM: [UInt8])? = nil, threads: Int = 2, limit: Int = 1 << 20,
        counter: Counter = Counter()
    ) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration(listen: "127.0.0.1:0", tls: tls) { method, _ in
            method == "POST" ? limit : 0
        }
        configuration.threadCount = threads
        return try HTTPServer(configuration) { request in
            counter.add()
            let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            let head = "\(request.method) \(request.path) \(query)\n"
            return HTTPResponse(
                status: 200, contentType: "application/octet-stream", body: Array(head.utf8) + request.body)
        }
    }

    static func json(_ body: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    }

    @Test func getAndPostRoundTrip() throws {
        let server = try Self.echoServer()
        let client = try HTTPClient(baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil)
        let got = try client.get("/v1/echo?since=7&list")
        #expect(got.status == 200)
        #expect(got.contentType == "application/octet-stream")
        #expect(String(decoding: got.body, as: UTF8.self) == "GET /v1/echo since=7&list=\n")
        var random = SystemRandomNumberGenerator()
        let body = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let posted = try client.post("/v1/echo", body: body)
        #expect(posted.status == 200)
        #expect(Array(posted.body.dropFirst("POST /v1/echo \n".utf8.count)) == body)
        // The client's own limit: a response over it fails, whatever the server sends.
        let small = try HTTPClient(
            baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil, responseSizeMax: 1000)
        #expect(throws: HTTPClientError(.responseTooLarge, "")) { try small.post("/v1/echo", body: body) }
    }

    /// A body over its route's limit is answered 413 `too-large` in the clearing's JSON error shape, and never
    /// reaches the handler: with a declared length at once, and chunked (no length) at its end.
    @Test func overLimitBodiesAre413() throws {
        let counter = Counter()
        let server = try Self.echoServer(limit: 16, counter: counter)
        let client = try HTTPClient(baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil)
        let fits = try client.post("/v1/echo", body: [UInt8](repeating: 7, count: 16))
        #expect(fits.status == 200)
        let over = try client.post("/v1/echo", body: [UInt8](repeating: 7, count: 17))
        #expect(over.status == 413)
        #expect(over.contentType == "application/json")
        let error = try Self.json(over.body)
        #expect(error["format"] as? String == "secure-clearing-error-v1")
        #expect((error["error"] as? [String: Any])?["code"] as? String == "too-large")
        #expect(counter.count == 1, "the over-limit body never reached the handler")

        let raw = try RawClient(port: server.port)
        let chunk = String(repeating: "x", count: 40)
        try raw.send(
            "POST /v1/echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                + "\(String(chunk.count, radix: 16))\r\n\(chunk)\r\n0\r\n\r\n")
        let answer = try raw.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")
        #expect(answer.contains("\"too-large\""))
        #expect(counter.count == 1)
    }

    /// The clearing's routes: `GET /v1/health` answers the schema version and the process id; an unknown path is
    /// 404 `not-found` and a body on a route that takes none is 413, both in the one JSON error shape.
    @Test func healthAnd404JSON() throws {
        let database = try TestPostgres.freshDatabase()
        try ClearingSchema.migrate(try PostgresConnection(database.connectionString))
        let service = ClearingHealthService(pool: PostgresPool(database.connectionString, size: 2))
        let server = try HTTPServer(
            HTTPServerConfiguration(listen: "127.0.0.1:0") { ClearingHealthService.bodyLimit(method: $0, path: $1) }
        ) { service.handle($0) }
        let client = try HTTPClient(baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil)
        let health = try client.get("/v1/health")
        #expect(health.status == 200)
        #expect(health.contentType == "application/json")
        let fields = try Self.json(health.body)
        #expect(fields["format"] as? String == "secure-clearing-health-v1")
        #expect(fields["schemaVersion"] as? Int == ClearingSchema.version)
        #expect(fields["pid"] as? Int == Int(getpid()))
        for (path, status, code) in [("/v1/nothing", 404, "not-found"), ("/", 404, "not-found")] {
            let missing = try client.get(path)
            #expect(missing.status == status)
            let error = try Self.json(missing.body)
            #expect(error["format"] as? String == "secure-clearing-error-v1")
            let inner = try #require(error["error"] as? [String: Any])
            #expect(inner["code"] as? String == code)
            #expect((inner["message"] as? String)?.isEmpty == false)
            #expect(Set(inner.keys) == ["code", "message"])
        }
        let tooLarge = try client.post("/v1/health", body: [1])
        #expect(tooLarge.status == 413)
        let wrongMethod = try client.post("/v1/health", body: [])
        #expect(wrongMethod.status == 405)

        // Each body against its schema in docs/schemas/clearing, by the independent oracle the CLI's JSON uses.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-json-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var cases: [[String: Any]] = []
        let outputs = [
            ("health", "secure-clearing-health-v1", health.body),
            ("404", "secure-clearing-error-v1", try client.get("/x").body),
            ("413", "secure-clearing-error-v1", tooLarge.body), ("405", "secure-clearing-error-v1", wrongMethod.body),
        ]
        for (index, (command, format, body)) in outputs.enumerated() {
            let file = directory + "/output-\(index)"
            try Data(body).write(to: URL(fileURLWithPath: file))
            cases.append(["command": command, "format": format, "file": file, "lines": false, "amounts": [Int]()])
        }
        let casesFile = directory + "/cases.json"
        try JSONSerialization.data(withJSONObject: cases).write(to: URL(fileURLWithPath: casesFile))
        let oracle = try Run.program(
            Run.projectRoot + "/.venv/bin/python",
            [
                Run.projectRoot + "/scripts/oracles/json_schemas.py", Run.projectRoot + "/docs/schemas/clearing",
                casesFile,
            ])
        #expect(oracle.status == 0, "\(oracle.output)\(oracle.stderr)")
    }

    /// TLS with a self-signed certificate made by openssl: the pinned key's digest connects; any other digest
    /// fails with CURLE_SSL_PINNEDPUBKEYNOTMATCH before the request is sent, so the server's handler never runs.
    @Test func tlsWithPinnedKey() throws {
        let certificate = try SelfSignedCertificate()
        let digest = certificate.keyDigest
        let counter = Counter()
        let server = try Self.echoServer(
            tls: (try Self.read(certificate.keyPath), try Self.read(certificate.certificatePath)), counter: counter)
        #expect(server.usesTLS)
        let pinned = try HTTPClient(baseURL: "https://127.0.0.1:\(server.port)", pinnedKeyDigest: digest)
        let answer = try pinned.post("/v1/echo", body: Array("over TLS".utf8))
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "POST /v1/echo \nover TLS")
        #expect(counter.count == 1)

        var wrong = digest
        wrong[0] ^= 1
        let impostor = try HTTPClient(baseURL: "https://127.0.0.1:\(server.port)", pinnedKeyDigest: wrong)
        do {
            _ = try impostor.post("/v1/echo", body: Array("secret".utf8))
            Issue.record("a wrong pin connected")
        } catch let error as HTTPClientError {
            #expect(error.code == .pinMismatch)
            #expect(error.curlCodeName == "CURLE_SSL_PINNEDPUBKEYNOTMATCH")
        }
        #expect(counter.count == 1, "the server received no request under the wrong pin")
        // Plain HTTP to the TLS port gets no answer from the handler either.
        #expect(throws: HTTPClientError.self) {
            _ = try HTTPClient(baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil).get("/v1/echo")
        }
        #expect(counter.count == 1)
    }

    /// Plain HTTP only on loopback; a listen address that does not parse is refused; a pin needs https.
    @Test func refusedConfigurations() throws {
        for address in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
            #expect(throws: HTTPServerError(.badAddress, ""), "\(address)") {
                _ = try HTTPServer(HTTPServerConfiguration(listen: address) { _, _ in 0 }) { _ in
                    HTTPResponse(status: 200, contentType: "text/plain", body: [])
                }
            }
        }
        for address in ["localhost", "127.0.0.1", "127.0.0.1:99999", "host:80"] {
            #expect(throws: HTTPServerError(.badAddress, ""), "\(address)") {
                _ = try HTTPServer(HTTPServerConfiguration(listen: address) { _, _ in 0 }) { _ in
                    HTTPResponse(status: 200, contentType: "text/plain", body: [])
                }
            }
        }
        #expect(throws: HTTPClientError(.badRequest, "")) {
            _ = try HTTPClient(baseURL: "http://127.0.0.1:1", pinnedKeyDigest: [UInt8](repeating: 0, count: 32))
        }
        #expect(throws: HTTPClientError(.badRequest, "")) {
            _ = try HTTPClient(baseURL: "https://127.0.0.1:1", pinnedKeyDigest: nil)
        }
        #expect(throws: HTTPClientError(.connectionFailed, "")) {
            // Port 1 on loopback: nothing listens there.
            _ = try HTTPClient(baseURL: "http://127.0.0.1:1", pinnedKeyDigest: nil).get("/")
        }
    }

    /// A client that sends its body one byte a second holds only its connection: on a server with a single
    /// thread, another client's whole request is answered while the slow one is still sending, and the slow one is
    /// answered correctly at its end.
    @Test func slowClientDoesNotDelayAnother() throws {
        let counter = Counter()
        let server = try Self.echoServer(threads: 1, counter: counter)
        let slow = try RawClient(port: server.port)
        try slow.send("POST /v1/slow HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\nConnection: close\r\n\r\na")
        let fast = try HTTPClient(baseURL: "http://127.0.0.1:\(server.port)", pinnedKeyDigest: nil, timeoutSeconds: 5)
        let answer = try fast.get("/v1/fast")
        #expect(answer.status == 200)
        #expect(counter.count == 1, "only the fast request reached the handler; the slow one is still sending")
        for byte in ["b", "c"] {
            Thread.sleep(forTimeInterval: 1)
            try slow.send(byte)
        }
        let slowAnswer = try slow.readAll()
        #expect(slowAnswer.hasPrefix("HTTP/1.1 200"))
        #expect(slowAnswer.hasSuffix("POST /v1/slow \nabc"))
        #expect(counter.count == 2)
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// A P-256 key and a self-signed certificate made by the openssl command in a temporary folder (removed on
/// deinit), and the SHA-256 of its DER SubjectPublicKeyInfo, the digest a client pins.
final class SelfSignedCertificate {
    let directory: String
    var keyPath: String { directory + "/key.pem" }
    var certificatePath: String { directory + "/cert.pem" }
    let keyDigest: [UInt8]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-tls-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let made = try Run.program(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                "-subj", "/CN=clearing.test", "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem",
            ])
        guard made.status == 0 else { throw TestPostgres.Failure("openssl req failed: \(made.stderr)") }
        keyDigest = try Run.program(
            "/bin/bash",
            [
                "-c",
                #"openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary"#,
                "_", directory + "/cert.pem",
            ]
        ).stdout
        guard keyDigest.count == 32 else { throw TestPostgres.Failure("the key digest is not 32 bytes") }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

/// A client that writes raw bytes to a TCP socket on loopback, to send what libcurl would not (a byte at a time,
/// a chunked body) and read the raw answer.
final class RawClient {
    private let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestPostgres.Failure("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestPostgres.Failure("connect to port \(port) failed")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw TestPostgres.Failure("send failed") }
    }

    /// Everything until the server closes the connection (or 10 s pass).
    func readAll() throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
