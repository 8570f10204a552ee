import Foundation
import SecureSync
import SecureTestSupport
import Testing

@testable import SecureClearing

/// The `secure-clearing` executable built beside the tests, and a running `serve`.
enum ClearingProcess {
    static var binary: String { Run.productsDirectory + "/secure-clearing" }

    /// A started `serve` and the port it printed; stopped by its pid.
    final class Serving {
        let process = Process()
        let port: Int
        private let output = Pipe()
        private let errors = Pipe()

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: ClearingProcess.binary)
            process.arguments = ["serve"] + arguments
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            // The first line is "listening HOST:PORT", printed once the server accepts connections.
            var line: [UInt8] = []
            let handle = output.fileHandleForReading
            while !line.contains(0x0A) {
                let data = handle.availableData
                if data.isEmpty { break }
                line += data
            }
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.hasPrefix("listening "), let colon = text.lastIndex(of: ":"),
                let port = Int(text[text.index(after: colon)...])
            else {
                process.terminate()
                process.waitUntilExit()
                let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                throw TestPostgres.Failure("serve did not start: \(text) \(stderr)")
            }
            self.port = port
        }

        /// Sends `signal` to the pid and waits for the exit status.
        func stop(_ signal: Int32 = SIGTERM) -> Int32 {
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
            return process.terminationStatus
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }
}

@Suite("secure-clearing command line")
struct ClearingCLITests {
    /// `serve` as a real process: it answers /v1/health with its own pid, and SIGTERM and SIGINT each stop it
    /// with exit 0.
    @Test func serveAnswersAndStopsOnSignals() throws {
        let database = try TestPostgres.freshDatabase()
        let migrated = try Run.program(ClearingProcess.binary, ["migrate", "--db", database.url])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.output.contains("applied migrations 1, 2;"))
        for signal in [SIGTERM, SIGINT] {
            let serving = try ClearingProcess.Serving(
                ["--db", database.url, "--listen", "127.0.0.1:0", "--tls-terminated-by-proxy", "--threads", "1"])
            let client = try HTTPClient(baseURL: "http://127.0.0.1:\(serving.port)", pinnedKeyDigest: nil)
            let health = try client.get("/v1/health")
            #expect(health.status == 200)
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(health.body)) as? [String: Any])
            #expect(fields["pid"] as? Int == Int(serving.process.processIdentifier))
            #expect(fields["schemaVersion"] as? Int == ClearingSchema.version)
            #expect(try client.get("/v1/wallets").status == 404)
            #expect(serving.stop(signal) == 0)
            #expect(throws: HTTPClientError.self) { try client.get("/v1/health") }
        }
    }

    /// `serve` with TLS from key and certificate files: a client pinning the certificate's key gets health over
    /// https; one pinning another key is refused before it sends anything.
    @Test func serveOverTLS() throws {
        let database = try TestPostgres.freshDatabase()
        #expect(try Run.program(ClearingProcess.binary, ["migrate", "--db", database.url]).status == 0)
        let certificate = try SelfSignedCertificate()
        let serving = try ClearingProcess.Serving(
            [
                "--db", database.url, "--listen", "127.0.0.1:0", "--tls-key", certificate.keyPath, "--tls-cert",
                certificate.certificatePath, "--threads", "1",
            ])
        let client = try HTTPClient(
            baseURL: "https://127.0.0.1:\(serving.port)", pinnedKeyDigest: certificate.keyDigest)
        #expect(try client.get("/v1/health").status == 200)
        var other = certificate.keyDigest
        other[31] ^= 0x80
        let impostor = try HTTPClient(baseURL: "https://127.0.0.1:\(serving.port)", pinnedKeyDigest: other)
        #expect(throws: HTTPClientError(.pinMismatch, "")) { try impostor.get("/v1/health") }
        #expect(serving.stop() == 0)
    }

    /// `serve` refuses a database that was never migrated (exit 1, naming `migrate`), and the arguments are
    /// checked: a TLS choice is required, plain HTTP only on loopback.
    @Test func serveRefusals() throws {
        let database = try TestPostgres.freshDatabase()
        let unmigrated = try Run.program(
            ClearingProcess.binary,
            ["serve", "--db", database.url, "--listen", "127.0.0.1:0", "--tls-terminated-by-proxy"])
        #expect(unmigrated.status == 1)
        #expect(unmigrated.stderr.contains("secure-clearing migrate"), "\(unmigrated.stderr)")
        let noTLSChoice = try Run.program(
            ClearingProcess.binary, ["serve", "--db", database.url, "--listen", "127.0.0.1:0"])
        #expect(noTLSChoice.status == 2)
        #expect(noTLSChoice.stderr.contains("--tls-terminated-by-proxy"))
        _ = try Run.program(ClearingProcess.binary, ["migrate", "--db", database.url])
        let exposed = try Run.program(
            ClearingProcess.binary,
            ["serve", "--db", database.url, "--listen", "0.0.0.0:0", "--tls-terminated-by-proxy"])
        #expect(exposed.status == 1)
        #expect(exposed.stderr.contains("loopback"), "\(exposed.stderr)")
        let badDatabase = try Run.program(
            ClearingProcess.binary, ["migrate", "--db", "postgresql://clearing@127.0.0.1:1/none"])
        #expect(badDatabase.status == 1)
        #expect(badDatabase.stderr.contains("cannot connect"))
        #expect(try Run.program(ClearingProcess.binary, ["frobnicate"]).status == 2)
        #expect(try Run.program(ClearingProcess.binary, ["--help"]).output.contains("secure-clearing serve"))
    }
}
