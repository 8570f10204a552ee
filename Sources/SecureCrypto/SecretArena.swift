import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where secrets live in memory: pages that no core dump and no debugger's `gcore` writes out
/// (`MADV_DONTDUMP`) and that are locked against swapping where the limit allows (`mlock`). Core dumps are
/// also switched off for the whole process (`ProcessSafety`); this holds even if a dump is taken anyway.
///
/// Small secrets (keys, shared secrets, PINs) come from size classes carved out of 64 KiB chunks and are
/// kept on free lists when released, so a handshake does not cost a system call per key. Larger ones get
/// pages of their own, returned to the system when released. Callers wipe what they release.
public final class SecretArena: @unchecked Sendable {
    public static let shared = SecretArena()

    /// The size classes, in bytes; anything larger gets pages of its own.
    static let classSizes = [32, 64, 128, 256, 512, 1024, 2048, 4096]
    /// Each chunk mapped for small secrets.
    static let chunkByteCount = 64 * 1024

    private let lock = NSLock()
    private var free: [[UnsafeMutableRawPointer]] = Array(repeating: [], count: classSizes.count)
    private var chunk: UnsafeMutableRawPointer?
    private var chunkUsed = 0
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// A buffer of at least `count` bytes, 16-byte aligned, in excluded pages. Traps when the system has
    /// no memory to map, as an allocation failure does everywhere in Swift.
    public func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let index = Self.classSizes.firstIndex(where: { $0 >= count }) else {
            return Self.map(Self.roundedToPages(count))
        }
        return lock.withLock {
            if let reused = free[index].popLast() { return reused }
            let size = Self.classSizes[index]
            if chunk == nil || chunkUsed + size > Self.chunkByteCount {
                chunk = Self.map(Self.chunkByteCount)
                chunkUsed = 0
            }
            let pointer = chunk! + chunkUsed
            chunkUsed += size
            return pointer
        }
    }

    /// Takes back a buffer from `allocate(count)`; the caller has wiped it.
    public func release(_ pointer: UnsafeMutableRawPointer, count: Int) {
        guard let index = Self.classSizes.firstIndex(where: { $0 >= count }) else {
            let size = Self.roundedToPages(count)
            munlock(pointer, size)
            munmap(pointer, size)
            return
        }
        lock.withLock { free[index].append(pointer) }
    }

    private static func roundedToPages(_ count: Int) -> Int {
        (Swift.max(count, 1) + pageSize - 1) / pageSize * pageSize
    }

    private static func map(_ size: Int) -> UnsafeMutableRawPointer {
        guard let pointer = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            pointer != MAP_FAILED
        else { fatalError("no memory to map for secrets (\(size) bytes): \(String(cString: strerror(errno)))") }
        // Both are best effort: an older kernel without MADV_DONTDUMP, or a low RLIMIT_MEMLOCK, still leaves
        // the process-wide switch against core dumps.
        _ = madvise(pointer, size, MADV_DONTDUMP)
        _ = mlock(pointer, size)
        return pointer
    }

    /// Whether the page holding `pointer` is excluded from core dumps, as /proc/self/smaps reports it.
    public static func isExcludedFromDumps(_ pointer: UnsafeRawPointer) -> Bool {
        // Read with read(2): /proc files report a size of zero, which Foundation's readers trust.
        let descriptor = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        let smaps = String(decoding: bytes, as: UTF8.self)
        let address = UInt(bitPattern: pointer)
        var inRegion = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
                let low = UInt(line[..<dash], radix: 16),
                let high = UInt(line[line.index(after: dash)..<space], radix: 16)
            {
                inRegion = address >= low && address < high
            } else if inRegion, line.hasPrefix("VmFlags:") {
                return line.split(separator: " ").contains("dd")
            }
        }
        return false
    }
}
