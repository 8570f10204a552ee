import Foundation
import SecureCrypto

/// Where the anchor lives: the latest signed checkpoint, kept outside the database so that a rollback of
/// the database alone is caught. A private CKO_DATA object on the token where the token allows one;
/// otherwise a file in the user's state folder, only with `--allow-file-anchor`, which is weaker (see
/// docs/THREAT-MODEL.md).
public protocol AnchorStorage: AnyObject {
    /// "token" or "file", for messages and the wallet's metadata.
    var kind: String { get }
    /// The stored anchor bytes, or nil when there is none yet.
    func load() throws -> [UInt8]?
    /// Replaces the anchor. Called only after the database commit it reflects is durable.
    func store(_ bytes: [UInt8]) throws
}

/// The file anchor: written to a temporary file, fsync'ed, renamed over the old one, and the folder
/// fsync'ed, so a crash leaves the old anchor or the new one.
public final class FileAnchor: AnchorStorage {
    public let path: String
    public var kind: String { "file" }

    public init(path: String) {
        self.path = path
    }

    public func load() throws -> [UInt8]? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError(.anchorUnavailable, "cannot read the anchor file \(path)")
        }
        return Array(data)
    }

    public func store(_ bytes: [UInt8]) throws {
        try DurableFile.write(bytes, to: path)
    }
}

/// Crash-safe whole-file writes.
public enum DurableFile {
    /// Writes `bytes` to `path` atomically and durably (temporary file, fsync, rename, fsync of the folder).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot write \(temporary): \(String(cString: strerror(errno)))")
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(descriptor)
                throw StoreError(.io, "cannot write \(temporary): \(String(cString: strerror(errno)))")
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            close(descriptor)
            throw StoreError(.io, "cannot flush \(temporary) to disk")
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else { throw StoreError(.io, "cannot rename \(temporary) to \(path)") }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}
