import CProcessSafety
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a PIN comes from: `prompt`, `file:PATH`, `env:VAR` or `fd:N`. A URI's `pin-source` (a path or
/// a `file:` form) and `pin-value` are honoured too; `pin-value` is visible to other local users through
/// the process list, and the documentation says so.
public enum PINSource: Equatable, Sendable, CustomStringConvertible {
    case prompt
    case file(String)
    case environment(String)
    case fileDescriptor(Int32)
    case value(String)

    /// Parses a `--pin-source` SPEC.
    public init(spec: String) throws {
        if spec == "prompt" {
            self = .prompt
        } else if spec.hasPrefix("file:"), spec.count > 5 {
            self = .file(String(spec.dropFirst(5)))
        } else if spec.hasPrefix("env:"), spec.count > 4 {
            self = .environment(String(spec.dropFirst(4)))
        } else if spec.hasPrefix("fd:"), let number = Int32(spec.dropFirst(3)), number >= 0 {
            self = .fileDescriptor(number)
        } else {
            throw TokenError(
                .pinUnavailable, "the PIN source \"\(spec)\" is not one of prompt, file:PATH, env:VAR, fd:N")
        }
    }

    /// The PIN source a URI names, if any: `pin-value` wins over `pin-source`. p11-kit's own callback
    /// refuses the `file:` form, so it is parsed here.
    public init?(uri: PKCS11URI) throws {
        if let value = uri.pinValue {
            self = .value(value)
        } else if let source = uri.pinSource {
            if source.hasPrefix("file:") {
                var path = String(source.dropFirst(5))
                if path.hasPrefix("//") { path = String(path.dropFirst(2)) } // file:///path
                self = .file(path)
            } else if source.hasPrefix("/") {
                self = .file(source)
            } else {
                throw TokenError(
                    .pinUnavailable, "the URI's pin-source \"\(source)\" is neither a path nor a file: URI")
            }
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .prompt: return "prompt"
        case .file(let path): return "file:" + path
        case .environment(let name): return "env:" + name
        case .fileDescriptor(let number): return "fd:\(number)"
        case .value: return "pin-value (hidden)"
        }
    }

    /// The longest PIN file read; anything longer is not a PIN file.
    static let fileByteCountMax = 1024

    /// Reads the PIN once. A trailing newline (LF or CRLF) is dropped.
    public func read(prompt promptText: String = "PIN: ") throws -> PIN {
        switch self {
        case .prompt: return try Self.promptWithoutEcho(promptText)
        case .value(let text): return try PIN(text)
        case .environment(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw TokenError(.pinUnavailable, "the environment variable \(name) named as the PIN source is not set")
            }
            return try PIN(value)
        case .file(let path):
            // A FIFO is checked before the open, which waits for a writer: a FIFO others may use is refused
            // without waiting. The descriptor is checked again once open.
            var before = stat()
            if stat(path, &before) == 0, before.st_mode & S_IFMT == S_IFIFO {
                try Self.checkPINFile(before, path: path)
            }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw TokenError(
                    .pinUnavailable, "cannot open the PIN file \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            try Self.checkPINFile(descriptor, path: path)
            return try Self.readPIN(from: descriptor, what: "the PIN file \(path)")
        case .fileDescriptor(let number):
            return try Self.readPIN(from: number, what: "file descriptor \(number)")
        }
    }

    /// A PIN file is refused the way ssh refuses a private key: it must belong to the caller (or root) and be
    /// open to no one else (no 077 mode bit). A FIFO is allowed on the same terms: a password manager or a
    /// script pipes the PIN through one and nothing stays on disk, but a FIFO others may write to (or read
    /// from) would let them feed or take the PIN.
    static func checkPINFile(_ descriptor: Int32, path: String) throws {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw TokenError(
                .pinUnavailable, "cannot inspect the PIN file \(path): \(String(cString: strerror(errno)))")
        }
        try checkPINFile(status, path: path)
    }

    static func checkPINFile(_ status: stat, path: String) throws {
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFIFO else {
            throw TokenError(.pinUnavailable, "the PIN file \(path) is not a regular file or a FIFO")
        }
        guard status.st_uid == getuid() || status.st_uid == 0 else {
            throw TokenError(
                .pinUnavailable,
                "the PIN file \(path) belongs to user \(status.st_uid), not to you: anyone who owns it can change the PIN "
                    + "this command logs in with")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw TokenError(
                .pinUnavailable,
                "the PIN file \(path) can be read by others (mode \(String(status.st_mode & 0o777, radix: 8))); "
                    + "run `chmod 600 \(path)` and try again")
        }
    }

    private static func readPIN(from descriptor: Int32, what: String) throws -> PIN {
        var buffer = [UInt8](repeating: 0, count: fileByteCountMax + 1)
        defer { wipe(&buffer) }
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress! + total, $0.count - total)
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw TokenError(.pinUnavailable, "cannot read \(what): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            total += count
            // A PIN ends at the first newline, so reading from a pipe or terminal never waits for EOF.
            if buffer[..<total].contains(UInt8(ascii: "\n")) { break }
        }
        guard total <= fileByteCountMax else { throw TokenError(.pinUnavailable, "\(what) is too long to hold a PIN") }
        var end = buffer[..<total].firstIndex(of: UInt8(ascii: "\n")) ?? total
        if end > 0 && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        guard end > 0 else { throw TokenError(.pinUnavailable, "\(what) holds no PIN") }
        return try buffer.withUnsafeBytes { try PIN(bytes: UnsafeRawBufferPointer(rebasing: $0[..<end])) }
    }

    /// Reads a PIN from the controlling terminal with echo off.
    private static func promptWithoutEcho(_ text: String) throws -> PIN {
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard terminal >= 0 else {
            throw TokenError(
                .pinUnavailable, "no terminal to ask for the PIN; pass --pin-source file:PATH, env:VAR or fd:N")
        }
        defer { close(terminal) }
        var saved = termios()
        guard tcgetattr(terminal, &saved) == 0 else {
            throw TokenError(.pinUnavailable, "cannot switch the terminal's echo off to ask for the PIN")
        }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        // A signal that ends the process during the prompt gives the terminal its echo back first.
        secure_tty_guard(terminal, &saved)
        _ = tcsetattr(terminal, TCSAFLUSH, &silent)
        defer {
            _ = tcsetattr(terminal, TCSAFLUSH, &saved)
            secure_tty_unguard()
            _ = Glibc.write(terminal, "\n", 1)
        }
        _ = text.withCString { Glibc.write(terminal, $0, strlen($0)) }
        return try readPIN(from: terminal, what: "the terminal")
    }
}
