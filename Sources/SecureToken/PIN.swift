import Foundation
import SecureCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// A PIN in memory that is locked against swapping where the system allows it, left out of core dumps
/// (`SecretArena`), and wiped when the PIN is discarded or released. It is a class so that there is exactly one copy to wipe.
public final class PIN: @unchecked Sendable {
    /// The longest PIN accepted; PKCS#11 tokens allow far less (PIV: 8, SoftHSM: 255).
    public static let byteCountMax = 256

    private let storage: UnsafeMutableRawBufferPointer
    private var length: Int
    private let lock = NSLock()

    /// Copies the PIN's bytes into wiped storage. The caller wipes its own copy.
    public init(bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { throw TokenError(.pinUnavailable, "the PIN is empty") }
        guard bytes.count <= Self.byteCountMax else {
            throw TokenError(.pinUnavailable, "the PIN is longer than \(Self.byteCountMax) bytes")
        }
        storage = UnsafeMutableRawBufferPointer(
            start: SecretArena.shared.allocate(Self.byteCountMax), count: Self.byteCountMax)
        storage.copyMemory(from: bytes)
        length = bytes.count
    }

    /// Makes a PIN from a string; used for PINs that were already in a Swift string (a URI's pin-value).
    public convenience init(_ text: String) throws {
        var bytes = Array(text.utf8)
        defer { wipe(&bytes) }
        guard !bytes.isEmpty else { throw TokenError(.pinUnavailable, "the PIN is empty") }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { explicit_bzero(storage.baseAddress!, storage.count); storage.deallocate() }
        storage.copyBytes(from: bytes)
        try self.init(bytes: UnsafeRawBufferPointer(storage))
    }

    deinit {
        explicit_bzero(storage.baseAddress!, storage.count)
        SecretArena.shared.release(storage.baseAddress!, count: storage.count)
    }

    /// Where the PIN's bytes are, for tests that check how its memory is kept.
    var address: UnsafeRawPointer { UnsafeRawPointer(storage.baseAddress!) }

    /// Whether the PIN was discarded (after a wrong-PIN answer, or at the end of its approval).
    public var isDiscarded: Bool { lock.withLock { length == 0 } }

    /// Wipes the PIN. It can never be sent again, so a wrong PIN is never retried.
    public func discard() {
        lock.withLock {
            explicit_bzero(storage.baseAddress!, storage.count)
            length = 0
        }
    }

    /// Lends the PIN's bytes for one call. Throws when it was discarded.
    func withBytes<Result>(_ body: (UnsafeMutablePointer<UInt8>, Int) throws -> Result) throws -> Result {
        try lock.withLock {
            guard length > 0 else {
                throw TokenError(
                    .pinUnavailable, "the PIN was discarded after use or after a wrong-PIN answer; enter it again")
            }
            return try body(storage.baseAddress!.assumingMemoryBound(to: UInt8.self), length)
        }
    }
}

/// Overwrites a byte array in place.
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    bytes.removeAll()
}
