internal import CValgrindShim

/// Secret bytes (keys, shared secrets) held in memory that is overwritten when the last copy goes away, in
/// pages that core dumps leave out (`SecretArena`).
/// Copies of the struct share one immutable buffer; nothing here ever hands out a mutable view.
/// Equality is constant-time.
public struct SecretBytes: Sendable, Equatable, CustomStringConvertible {
    final class Storage: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let count: Int

        init(count: Int) {
            self.count = count
            pointer = SecretArena.shared.allocate(Swift.max(count, 1))
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: Swift.max(count, 1))
        }

        deinit {
            secureZero(pointer, count)
            SecretArena.shared.release(pointer, count: Swift.max(count, 1))
        }

        func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
            try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        }
    }

    let storage: Storage

    /// Copies `bytes` into wiped-on-release memory. The caller's array is not wiped; prefer producing
    /// secrets directly into `SecretBytes` where possible.
    public init(_ bytes: [UInt8]) {
        storage = Storage(count: bytes.count)
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { storage.pointer.copyMemory(from: base, byteCount: source.count) }
        }
    }

    /// `count` fresh bytes from the system CSPRNG.
    public init(randomCount count: Int) {
        precondition(count >= 0, "a negative byte count")
        storage = Storage(count: count)
        SystemRandom.fill(storage.pointer, count)
    }

    /// Copies the bytes at `buffer` (memory another library lends, such as a database row), with no array copy
    /// left behind.
    public init(copying buffer: UnsafeRawBufferPointer) {
        storage = Storage(count: buffer.count)
        if let base = buffer.baseAddress { storage.pointer.copyMemory(from: base, byteCount: buffer.count) }
    }

    /// Zero-filled, for a C call or an algorithm to write into before anyone else sees it.
    init(zeroedCount count: Int) { storage = Storage(count: count) }

    /// The parts one after another, copied straight into wiped-on-release memory (no array copy lingers).
    public static func concatenation(_ parts: [SecretBytes]) -> SecretBytes {
        let joined = SecretBytes(zeroedCount: parts.reduce(0) { $0 + $1.count })
        var offset = 0
        for part in parts {
            part.withUnsafeBytes { source in
                if let base = source.baseAddress {
                    (joined.storage.pointer + offset).copyMemory(from: base, byteCount: source.count)
                }
            }
            offset += part.count
        }
        return joined
    }

    /// The number of bytes.
    public var count: Int { storage.count }

    /// Lends the bytes for the duration of `body`; do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage.pointer, count: storage.count))
    }

    /// An ordinary array copy, which will not be wiped. For tests, and for handing a secret to an API
    /// that only takes arrays.
    public func copyBytes() -> [UInt8] { withUnsafeBytes { Array($0) } }

    /// Constant-time comparison of contents (lengths are public).
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { right in ConstantTime.equal(left, right) } }
    }

    /// Never prints the contents.
    public var description: String { "SecretBytes(\(count) bytes)" }
}

extension SystemRandom {
    /// Fills raw memory from the CSPRNG; traps if the CSPRNG fails, like `bytes(_:)`.
    static func fill(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
        guard count > 0 else { return }
        let random = bytes(count)
        random.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: count) }
    }
}

/// Comparisons whose running time does not depend on the contents compared.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes. Time depends only on the lengths, which are treated as
    /// public: inputs of different lengths compare unequal at once.
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        let difference: UInt8
        if let fast = a.withContiguousStorageIfAvailable({ left in
            b.withContiguousStorageIfAvailable { right in
                differenceOf(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer(right))
            }
        }), let value = fast {
            difference = value
        } else {
            var accumulator: UInt8 = 0
            for (left, right) in zip(a, b) { accumulator |= left ^ right }
            difference = accumulator
        }
        return isZero(difference)
    }

    /// Raw buffers, for SecretBytes and the internals.
    static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        return isZero(differenceOf(a, b))
    }

    /// OR of the XOR of all byte pairs: zero exactly when the buffers are equal. No branch on the contents.
    @inline(__always)
    static func differenceOf(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> UInt8 {
        var accumulator: UInt8 = 0
        for index in 0..<a.count { accumulator |= a[index] ^ b[index] }
        return accumulator
    }

    /// 0xFF when `difference` is zero, 0x00 otherwise, computed without a branch. The result passes
    /// through an optimisation barrier so the compiler cannot turn masked selections into branches.
    @inline(__always)
    static func maskIfZero(_ difference: UInt8) -> UInt8 {
        // (d − 1) has bit 8 set exactly when d = 0.
        secure_ct_value_barrier_u8(UInt8(truncatingIfNeeded: 0 &- ((UInt32(difference) &- 1) >> 8) & 1))
    }

    /// Turns the secret difference into a public Bool. This is the one place the comparison's outcome is
    /// released, so the constant-time check declassifies it here before anyone branches on it.
    @inline(__always)
    private static func isZero(_ difference: UInt8) -> Bool {
        var bit = UInt8(truncatingIfNeeded: (UInt32(difference) &- 1) >> 8) & 1
        declassify(&bit)
        return bit == 1
    }

    /// Tells valgrind that a value derived from secrets is now public (an outcome the caller may act on).
    @inline(__always)
    static func declassify<T>(_ value: inout T) {
        withUnsafeMutableBytes(of: &value) { secure_ct_mark_public($0.baseAddress, $0.count) }
    }
}
