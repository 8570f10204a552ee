import SecureCrypto

/// Merkle tree hashing and proof verification as in RFC 9162 §2.1 (the same tree as RFC 6962): leaves
/// hashed as SHA-256(0x00 ‖ leaf), interior nodes as SHA-256(0x01 ‖ left ‖ right), and the left subtree
/// of n leaves always holding the largest power of two below n. See docs/PROTOCOL.md, "Merkle tree and proofs".
public enum Merkle {
    /// Tree sizes are u64, so a proof never needs more than 64 hashes for inclusion; a consistency proof
    /// can need one more for the old root's own subtree. Decoders refuse longer proofs.
    public static let proofHashCountMax = 65

    /// MTH({}) = SHA-256 of the empty string.
    public static let emptyRoot = Digest32(of: [])

    /// The leaf hash SHA-256(0x00 ‖ leaf).
    public static func leafHash(_ leaf: [UInt8]) -> Digest32 {
        var hasher = SHA256.Hasher()
        hasher.update([UInt8(0x00)])
        hasher.update(leaf)
        return Digest32(finalizing: hasher)
    }

    /// The interior node hash SHA-256(0x01 ‖ left ‖ right).
    public static func nodeHash(_ left: Digest32, _ right: Digest32) -> Digest32 {
        var hasher = SHA256.Hasher()
        hasher.update([UInt8(0x01)])
        hasher.update(left.bytes)
        hasher.update(right.bytes)
        return Digest32(finalizing: hasher)
    }

    /// The largest power of two strictly below `count` (count ≥ 2): the size of the left subtree.
    static func splitPoint(_ count: UInt64) -> UInt64 {
        precondition(count >= 2)
        return UInt64(1) << (63 - (count - 1).leadingZeroBitCount)
    }

    /// The root an inclusion proof leads to (RFC 9162 §2.1.3.2), or nil when the proof's shape does not fit
    /// the index and size.
    public static func rootFromInclusionProof(
        leafHash: Digest32, index: UInt64, size: UInt64,
        proof: [Digest32]
    ) -> Digest32? {
        guard index < size, proof.count <= proofHashCountMax else { return nil }
        var fn = index
        var sn = size - 1
        var hash = leafHash
        for sibling in proof {
            guard sn != 0 else { return nil }
            if fn & 1 == 1 || fn == sn {
                hash = nodeHash(sibling, hash)
                while fn & 1 == 0 && fn != 0 {
                    fn >>= 1
                    sn >>= 1
                }
            } else {
                hash = nodeHash(hash, sibling)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 ? hash : nil
    }

    /// Whether `proof` shows the leaf with hash `leafHash` at `index` in the tree of `size` leaves with `root`.
    public static func verifyInclusion(
        leafHash: Digest32, index: UInt64, size: UInt64, proof: [Digest32],
        root: Digest32
    ) -> Bool {
        rootFromInclusionProof(leafHash: leafHash, index: index, size: size, proof: proof) == root
    }

    /// Whether `proof` shows the tree of `oldSize` leaves with `oldRoot` to be a prefix of the tree of
    /// `newSize` leaves with `newRoot` (RFC 9162 §2.1.4.2). Equal sizes need an empty proof and equal roots;
    /// the empty tree is a prefix of every tree.
    public static func verifyConsistency(
        oldSize: UInt64, newSize: UInt64, oldRoot: Digest32, newRoot: Digest32,
        proof: [Digest32]
    ) -> Bool {
        guard oldSize <= newSize, proof.count <= proofHashCountMax else { return false }
        if oldSize == newSize { return proof.isEmpty && oldRoot == newRoot }
        if oldSize == 0 { return proof.isEmpty && oldRoot == emptyRoot }
        guard !proof.isEmpty else { return false }
        // When the old tree is a complete subtree, its root is the proof's implicit first node.
        let path = oldSize & (oldSize - 1) == 0 ? [oldRoot] + proof : proof
        var fn = oldSize - 1
        var sn = newSize - 1
        while fn & 1 == 1 {
            fn >>= 1
            sn >>= 1
        }
        var oldHash = path[0]
        var newHash = path[0]
        for node in path.dropFirst() {
            guard sn != 0 else { return false }
            if fn & 1 == 1 || fn == sn {
                oldHash = nodeHash(node, oldHash)
                newHash = nodeHash(node, newHash)
                while fn & 1 == 0 && fn != 0 {
                    fn >>= 1
                    sn >>= 1
                }
            } else {
                newHash = nodeHash(newHash, node)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && oldHash == oldRoot && newHash == newRoot
    }

    /// The inclusion proof PATH(index, D[0:size]) of RFC 9162 §2.1.3.1, built from `rangeHash`, which
    /// returns MTH(D[lo:hi]). Each call asks for O(log size) subtree hashes.
    public static func inclusionProof(
        index: UInt64, size: UInt64,
        rangeHash: (_ lo: UInt64, _ hi: UInt64) throws -> Digest32
    ) rethrows -> [Digest32] {
        precondition(index < size, "inclusion proof for leaf \(index) of a tree of \(size)")
        var proof: [Digest32] = []
        var lo: UInt64 = 0
        var hi = size
        var target = index
        // Walk down from the root; siblings are collected top-down and reversed at the end.
        while hi - lo > 1 {
            let k = splitPoint(hi - lo)
            if target < k {
                proof.append(try rangeHash(lo + k, hi))
                hi = lo + k
            } else {
                proof.append(try rangeHash(lo, lo + k))
                lo += k
                target -= k
            }
        }
        return proof.reversed()
    }

    /// The consistency proof PROOF(oldSize, D[0:newSize]) of RFC 9162 §2.1.4.1, from `rangeHash`.
    /// Empty when oldSize is 0 or equals newSize.
    public static func consistencyProof(
        oldSize: UInt64, newSize: UInt64,
        rangeHash: (_ lo: UInt64, _ hi: UInt64) throws -> Digest32
    ) rethrows -> [Digest32] {
        precondition(oldSize <= newSize, "consistency proof from \(oldSize) to the smaller \(newSize)")
        guard oldSize > 0, oldSize < newSize else { return [] }
        var proof: [Digest32] = []
        var lo: UInt64 = 0
        var hi = newSize
        var m = oldSize
        var isWholeOldTree = true
        while m != hi - lo {
            let k = splitPoint(hi - lo)
            if m <= k {
                proof.append(try rangeHash(lo + k, hi))
                hi = lo + k
            } else {
                proof.append(try rangeHash(lo, lo + k))
                lo += k
                m -= k
                isWholeOldTree = false
            }
        }
        // SUBPROOF(m, D[m], b): nothing when the subtree is the old tree itself, else its hash.
        if !isWholeOldTree { proof.append(try rangeHash(lo, hi)) }
        return proof.reversed()
    }
}
