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
    /// Writes `bytes` to `path` atomically and durably: a new temporary file in the same folder (a random
    /// name, created with O_EXCL and O_NOFOLLOW, so nothing planted there is followed or truncated), fsync,
    /// rename over `path`, fsync of the folder.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        let (temporary, folder) = try writeTemporary(bytes, beside: path, mode: mode)
        guard rename(temporary, path) == 0 else {
            let cause = String(cString: strerror(errno))
            unlink(temporary)
            throw StoreError(.io, "cannot rename \(temporary) to \(path): \(cause)")
        }
        syncFolder(folder)
    }

    /// Writes `bytes` to `path` durably, and only if `path` does not exist: the file appears whole or not at
    /// all, and a file (or symbolic link) that exists or races in is never replaced (the new name is made
    /// with link(2), which refuses an existing name). Throws `StoreError(.exists)` then.
    public static func create(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600) throws {
        let (temporary, folder) = try writeTemporary(bytes, beside: path, mode: mode)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { throw StoreError(.exists, "\(path) exists; it is never overwritten") }
            throw StoreError(.io, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        syncFolder(folder)
    }

    /// Reserves `path`: creates it empty with O_EXCL and O_NOFOLLOW, so a later `write` to it (rename over
    /// the reservation) replaces only this file. Throws `StoreError(.exists)` when it exists.
    public static func reserve(_ path: String, mode: mode_t = 0o600) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw StoreError(.exists, "\(path) exists; it is never overwritten") }
            throw StoreError(.io, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
    }

    private static func writeTemporary(_ bytes: [UInt8], beside path: String, mode: mode_t) throws
        -> (String, String)
    {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<8 {
            temporary = path + ".tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot write \(temporary): \(String(cString: strerror(errno)))")
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let cause = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw StoreError(.io, "cannot write \(path): \(cause)")
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let cause = String(cString: strerror(errno))
            close(descriptor)
            unlink(temporary)
            throw StoreError(.io, "cannot flush \(path) to disk: \(cause)")
        }
        close(descriptor)
        return (temporary, folder)
    }

    private static func syncFolder(_ folder: String) {
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}
