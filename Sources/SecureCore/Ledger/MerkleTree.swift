import SecureCrypto

/// An append-only Merkle tree that keeps every complete subtree hash: level 0 holds the leaf hashes,
/// level l the hashes of the aligned subtrees of 2^l leaves. Append is O(log n) amortised O(1) hashes,
/// the root of any size is O(log n) hashes, and each proof O(log² n) at worst (O(log n) node reads).
/// Memory is about 64 bytes per leaf: 64 MB for a million entries.
///
/// The store can rebuild it from stored leaf hashes at open (`init(leafHashes:)`), or persist the levels
/// and rebuild with `init(levels:)`; the append path alone needs only `MerkleCompactRange`.
public struct MerkleTree: Sendable {
    /// Flat arrays of 32-byte hashes, one per level: one array per level rather than one `Digest32` per node
    /// keeps the tree at 32 bytes a node.
    private var levels: [[UInt8]] = [[]]

    /// An empty tree.
    public init() {}

    /// A tree over the given leaf hashes, in order.
    public init(leafHashes: some Sequence<Digest32>) {
        for hash in leafHashes { append(leafHash: hash) }
    }

    /// The number of leaves.
    public var size: UInt64 { UInt64(levels[0].count / Digest32.byteCount) }

    /// The hash of leaf `index`.
    public func leafHash(at index: UInt64) -> Digest32 { node(level: 0, index: index) }

    /// Adds a leaf by its leaf hash (`Merkle.leafHash(encoding)`).
    public mutating func append(leafHash: Digest32) {
        levels[0].append(contentsOf: leafHash.bytes)
        var level = 0
        var hash = leafHash
        // Each time a level gains an even count, the last two nodes complete a parent.
        while (levels[level].count / Digest32.byteCount) % 2 == 0 {
            let count = levels[level].count / Digest32.byteCount
            let left = node(level: level, index: UInt64(count - 2))
            hash = Merkle.nodeHash(left, hash)
            level += 1
            if levels.count == level { levels.append([]) }
            levels[level].append(contentsOf: hash.bytes)
        }
    }

    /// MTH of the first `size` leaves (the current root by default).
    public func root(size: UInt64? = nil) -> Digest32 {
        let size = size ?? self.size
        precondition(size <= self.size, "root of \(size) leaves requested from a tree of \(self.size)")
        return size == 0 ? Merkle.emptyRoot : rangeHash(0, size)
    }

    /// The inclusion proof for leaf `index` in the tree of the first `size` leaves.
    public func inclusionProof(index: UInt64, size: UInt64? = nil) -> [Digest32] {
        let size = size ?? self.size
        precondition(size <= self.size)
        return Merkle.inclusionProof(index: index, size: size, rangeHash: rangeHash)
    }

    /// The consistency proof from the tree of `oldSize` leaves to that of `newSize` (default: all).
    public func consistencyProof(oldSize: UInt64, newSize: UInt64? = nil) -> [Digest32] {
        let newSize = newSize ?? self.size
        precondition(newSize <= self.size)
        return Merkle.consistencyProof(oldSize: oldSize, newSize: newSize, rangeHash: rangeHash)
    }

    /// MTH(D[lo:hi]) for 0 ≤ lo < hi ≤ size: a stored node when the range is an aligned complete subtree,
    /// else split as the RFC splits it. Ranges the RFC's recursion asks for always have a stored left half.
    public func rangeHash(_ lo: UInt64, _ hi: UInt64) -> Digest32 {
        precondition(lo < hi && hi <= size, "range \(lo)..<\(hi) outside a tree of \(size)")
        let count = hi - lo
        if count & (count - 1) == 0 && lo % count == 0 {
            return node(level: count.trailingZeroBitCount, index: lo / count)
        }
        let k = Merkle.splitPoint(count)
        return Merkle.nodeHash(rangeHash(lo, lo + k), rangeHash(lo + k, hi))
    }

    private func node(level: Int, index: UInt64) -> Digest32 {
        let start = Int(index) * Digest32.byteCount
        return Digest32(exactly: Array(levels[level][start..<start + Digest32.byteCount]))
    }
}

/// The O(log n) state needed to append and compute the root: the roots of the complete subtrees that
/// make up the tree, largest first (one per set bit of the size). The store keeps this beside the latest
/// checkpoint so an append needs no other tree nodes.
public struct MerkleCompactRange: Hashable, Sendable {
    /// The number of leaves.
    public private(set) var size: UInt64
    /// Subtree roots, largest (leftmost) first.
    public private(set) var peaks: [Digest32]

    /// An empty range.
    public init() {
        size = 0
        peaks = []
    }

    /// Restores a range; the number of peaks must equal the number of set bits of `size`.
    public init(size: UInt64, peaks: [Digest32]) throws {
        guard peaks.count == size.nonzeroBitCount else {
            throw FormatError(.invalidValue, "a compact range of \(size) leaves has \(size.nonzeroBitCount) peaks")
        }
        self.size = size
        self.peaks = peaks
    }

    /// Appends a leaf hash, merging equal-sized subtrees as a binary counter carries.
    public mutating func append(leafHash: Digest32) {
        precondition(size < UInt64.max)
        var hash = leafHash
        var carries = (~size).trailingZeroBitCount // number of trailing one bits of size
        while carries > 0 {
            hash = Merkle.nodeHash(peaks.removeLast(), hash)
            carries -= 1
        }
        peaks.append(hash)
        size += 1
    }

    /// The root: the peaks folded from the right, as the RFC's recursion builds it.
    public var root: Digest32 {
        guard var hash = peaks.last else { return Merkle.emptyRoot }
        for peak in peaks.dropLast().reversed() { hash = Merkle.nodeHash(peak, hash) }
        return hash
    }
}
