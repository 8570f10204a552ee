import Foundation
import SecureCrypto
import SecureToken

/// Real SoftHSM tokens for tests, in one temporary folder per test process. SoftHSM reads its config
/// only when it is first initialized in a process, so every token of a process lives in that folder;
/// each test takes a token of its own, because a login or logout on one token is shared by every
/// session of the process on it.
public enum TestTokens {
    /// The process's token folder.
    public static let layout: DemoToken.Layout = {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("secure-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let layout = DemoToken.Layout(directory: directory)
        try! DemoToken.prepare(layout) // a test process without a writable temp folder cannot test anything
        return layout
    }()

    private static let counter = Counter()

    /// A fresh token with its URI and the path of its PIN file.
    public struct Fresh {
        public let token: Token
        public let uri: PKCS11URI
        public let pinPath: String

        /// The PIN, read fresh from its file.
        public func pin() throws -> PIN { try PINSource.file(pinPath).read() }

        /// An authenticated session on the token.
        public func session() throws -> TokenSession { try TokenSession(token: token, pin: try pin()) }
    }

    /// Makes a new token whose label starts with `prefix` (up to 20 bytes).
    public static func fresh(_ prefix: String = "test") throws -> Fresh {
        let label = String(prefix.prefix(20)) + "-\(counter.next())"
        let created = try lock.withLock { try DemoToken.create(layout, label: label) }
        return Fresh(token: try TokenLibrary.shared.token(created.uri), uri: created.uri, pinPath: created.pinPath)
    }

    private static let lock = NSLock()

    private final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func next() -> Int {
            lock.withLock {
                value += 1; return value
            }
        }
    }
}

/// Runs a program and captures its exit code, stdout and stderr. For CLI tests and oracles.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: [UInt8]
    public let stderr: String
    /// Standard output as text.
    public var output: String { String(decoding: stdout, as: UTF8.self) }
}

public enum Run {
    /// Runs `executable` with arguments, an optional environment overlay and standard input bytes.
    public static func program(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        input: [UInt8] = [], directory: String? = nil
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let outPipe = Pipe(), errPipe = Pipe(), inPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe
        try process.run()
        inPipe.fileHandleForWriting.write(Data(input))
        try inPipe.fileHandleForWriting.close()
        // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
        final class Box: @unchecked Sendable { var data = Data() }
        let errBox = Box()
        let done = DispatchSemaphore(value: 0)
        let errHandle = errPipe.fileHandleForReading
        Thread.detachNewThread {
            errBox.data = errHandle.readDataToEndOfFile()
            done.signal()
        }
        let outData = outPipe.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        let errData = errBox.data
        process.waitUntilExit()
        // A child killed by a signal (a trap is SIGILL or SIGTRAP) reports 128 + the signal, as a shell does,
        // so a test that expects a clean exit code cannot mistake a crash for one.
        let status =
            process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return ProcessResult(
            status: status, stdout: Array(outData),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The directory of the build products (where the `secure` executable is), found from the test bundle.
    public static var productsDirectory: String {
        let candidates = [
            Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        for candidate in candidates {
            var url = candidate
            for _ in 0..<3 {
                if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("secure").path) {
                    return url.path
                }
                url = url.deletingLastPathComponent()
            }
        }
        return candidates[0].path
    }

    /// The `secure` executable built beside the tests.
    public static var secure: String { productsDirectory + "/secure" }

    /// The project's root folder (where Package.swift is), found from this source file.
    public static var projectRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }
}
