import SecureCrypto
import Testing

@testable import SecureCore

/// The RFC 9162 §2.1 definitions written as literally as possible, to check the efficient code against.
enum ReferenceMerkle {
    static func mth(_ leaves: ArraySlice<[UInt8]>) -> [UInt8] {
        if leaves.isEmpty { return SHA256.hash([UInt8]()) }
        if leaves.count == 1 { return SHA256.hash([0] + leaves.first!) }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let mid = leaves.startIndex + k
        return SHA256.hash([1] + mth(leaves[..<mid]) + mth(leaves[mid...]))
    }

    static func path(_ m: Int, _ leaves: ArraySlice<[UInt8]>) -> [[UInt8]] {
        if leaves.count == 1 { return [] }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let mid = leaves.startIndex + k
        if m < k { return path(m, leaves[..<mid]) + [mth(leaves[mid...])] }
        return path(m - k, leaves[mid...]) + [mth(leaves[..<mid])]
    }

    static func subproof(_ m: Int, _ leaves: ArraySlice<[UInt8]>, _ whole: Bool) -> [[UInt8]] {
        if m == leaves.count { return whole ? [] : [mth(leaves)] }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let mid = leaves.startIndex + k
        if m <= k { return subproof(m, leaves[..<mid], whole) + [mth(leaves[mid...])] }
        return subproof(m - k, leaves[mid...], false) + [mth(leaves[..<mid])]
    }
}

@Suite("Merkle tree (RFC 9162)")
struct MerkleTests {
    /// Leaf data that differs per index and in length.
    static let leaves: [[UInt8]] = (0..<70).map { index in
        [UInt8](repeating: UInt8(index), count: index % 5) + [UInt8(index)]
    }

    static func tree(_ size: Int) -> MerkleTree { MerkleTree(leafHashes: leaves.prefix(size).map(Merkle.leafHash)) }

    @Test("the certificate-transparency test vectors")
    func knownRoots() {
        let leaves: [[UInt8]] = [
            "", "00", "10", "2021", "3031", "40414243", "5051525354555657",
            "606162636465666768696a6b6c6d6e6f",
        ].map { Hex.decode($0)! }
        let roots = [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ]
        let tree = MerkleTree(leafHashes: leaves.map(Merkle.leafHash))
        for (index, root) in roots.enumerated() {
            #expect(tree.root(size: UInt64(index + 1)).hex == root, "case size \(index + 1)")
        }
        #expect(MerkleTree().root().hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("roots of every size 0…70 match the recursive definition, incrementally and compactly")
    func roots() throws {
        var tree = MerkleTree()
        var compact = MerkleCompactRange()
        #expect(tree.root().bytes == ReferenceMerkle.mth([]) && compact.root == tree.root())
        for size in 1...70 {
            let hash = Merkle.leafHash(MerkleTests.leaves[size - 1])
            tree.append(leafHash: hash)
            compact.append(leafHash: hash)
            let expected = ReferenceMerkle.mth(MerkleTests.leaves.prefix(size)[...])
            #expect(tree.root().bytes == expected, "case size \(size)")
            #expect(compact.root.bytes == expected && compact.size == UInt64(size), "case size \(size)")
            #expect(try MerkleCompactRange(size: compact.size, peaks: compact.peaks) == compact)
        }
        // Historical roots stay available.
        for size in 0...70 {
            #expect(tree.root(size: UInt64(size)).bytes == ReferenceMerkle.mth(MerkleTests.leaves.prefix(size)[...]))
        }
        #expect(throws: FormatError(.invalidValue, "")) {
            try MerkleCompactRange(size: 3, peaks: [Fixture.id(0)])
        }
    }

    @Test("every inclusion proof up to 40 leaves matches the RFC and verifies")
    func inclusion() {
        let tree = MerkleTests.tree(40)
        for size in 1...40 {
            let root = tree.root(size: UInt64(size))
            for index in 0..<size {
                let proof = tree.inclusionProof(index: UInt64(index), size: UInt64(size))
                #expect(
                    proof.map(\.bytes) == ReferenceMerkle.path(index, MerkleTests.leaves.prefix(size)[...]),
                    "case \(index)/\(size)")
                let leaf = Merkle.leafHash(MerkleTests.leaves[index])
                #expect(
                    Merkle.verifyInclusion(
                        leafHash: leaf, index: UInt64(index), size: UInt64(size), proof: proof,
                        root: root), "case \(index)/\(size)")
            }
        }
    }

    @Test("every consistency proof up to 40 leaves matches the RFC and verifies")
    func consistency() {
        let tree = MerkleTests.tree(40)
        for newSize in 1...40 {
            for oldSize in 0...newSize {
                let proof = tree.consistencyProof(oldSize: UInt64(oldSize), newSize: UInt64(newSize))
                if oldSize > 0 && oldSize < newSize {
                    #expect(
                        proof.map(\.bytes)
                            == ReferenceMerkle.subproof(oldSize, MerkleTests.leaves.prefix(newSize)[...], true),
                        "case \(oldSize)→\(newSize)")
                }
                #expect(
                    Merkle.verifyConsistency(
                        oldSize: UInt64(oldSize), newSize: UInt64(newSize),
                        oldRoot: tree.root(size: UInt64(oldSize)),
                        newRoot: tree.root(size: UInt64(newSize)), proof: proof),
                    "case \(oldSize)→\(newSize)")
            }
        }
    }

    @Test("tampered inclusion proofs are refused")
    func tamperedInclusion() {
        let tree = MerkleTests.tree(23)
        for size in [1, 2, 7, 8, 13, 23] {
            let root = tree.root(size: UInt64(size))
            for index in 0..<size {
                let leaf = Merkle.leafHash(MerkleTests.leaves[index])
                let proof = tree.inclusionProof(index: UInt64(index), size: UInt64(size))
                let n = UInt64(size)
                let i = UInt64(index)
                for position in proof.indices {
                    var changed = proof
                    changed[position] = changed[position].flipping(byte: position % 32, mask: 0x01)
                    #expect(!Merkle.verifyInclusion(leafHash: leaf, index: i, size: n, proof: changed, root: root))
                }
                #expect(
                    !Merkle.verifyInclusion(
                        leafHash: Merkle.leafHash([0xff]), index: i, size: n, proof: proof, root: root))
                #expect(!Merkle.verifyInclusion(leafHash: leaf, index: i, size: n, proof: proof + [root], root: root))
                if !proof.isEmpty {
                    #expect(
                        !Merkle.verifyInclusion(leafHash: leaf, index: i, size: n, proof: proof.dropLast(), root: root))
                }
                #expect(
                    !Merkle.verifyInclusion(leafHash: leaf, index: i + 1, size: n, proof: proof, root: root)
                        || MerkleTests.leaves[index] == MerkleTests.leaves[index + 1])
                #expect(!Merkle.verifyInclusion(leafHash: leaf, index: n, size: n, proof: proof, root: root))
                // A proof's shape can fit a neighbouring size with the same root; what binds the size is the
                // signed checkpoint that carries size and root together, so no check of n ± 1 belongs here.
            }
        }
    }

    @Test("tampered consistency proofs are refused")
    func tamperedConsistency() {
        let tree = MerkleTests.tree(30)
        for newSize in [2, 5, 8, 16, 17, 30] {
            for oldSize in 1..<newSize {
                let (m, n) = (UInt64(oldSize), UInt64(newSize))
                let oldRoot = tree.root(size: m)
                let newRoot = tree.root(size: n)
                let proof = tree.consistencyProof(oldSize: m, newSize: n)
                for position in proof.indices {
                    var changed = proof
                    changed[position] = changed[position].flipping(byte: 0, mask: 0x80)
                    #expect(
                        !Merkle.verifyConsistency(
                            oldSize: m, newSize: n, oldRoot: oldRoot, newRoot: newRoot,
                            proof: changed), "case \(m)→\(n) element \(position)")
                }
                #expect(
                    !Merkle.verifyConsistency(oldSize: m, newSize: n, oldRoot: oldRoot, newRoot: newRoot, proof: []))
                #expect(
                    !Merkle.verifyConsistency(
                        oldSize: m, newSize: n, oldRoot: oldRoot, newRoot: newRoot,
                        proof: proof + [oldRoot]))
                #expect(
                    !Merkle.verifyConsistency(oldSize: m, newSize: n, oldRoot: newRoot, newRoot: newRoot, proof: proof))
                #expect(
                    !Merkle.verifyConsistency(oldSize: m, newSize: n, oldRoot: oldRoot, newRoot: oldRoot, proof: proof))
                #expect(
                    !Merkle.verifyConsistency(oldSize: n, newSize: m, oldRoot: newRoot, newRoot: oldRoot, proof: proof))
                // A different history of the same size is not consistent.
                let other = MerkleTree(leafHashes: (0..<newSize).map { Merkle.leafHash([UInt8($0), 0xAA]) })
                #expect(
                    !Merkle.verifyConsistency(
                        oldSize: m, newSize: n, oldRoot: oldRoot, newRoot: other.root(),
                        proof: proof))
            }
        }
        #expect(
            !Merkle.verifyConsistency(
                oldSize: 3, newSize: 3, oldRoot: tree.root(size: 3), newRoot: tree.root(size: 3),
                proof: [tree.root(size: 3)]))
    }

    @Test("proofs from a leaf-hash closure equal those from the stored levels")
    func closureProofs() {
        let tree = MerkleTests.tree(70)
        let leafHashes = MerkleTests.leaves.map(Merkle.leafHash)
        let naive = { (lo: UInt64, hi: UInt64) in ReferenceMerkle.mthOfHashes(leafHashes[Int(lo)..<Int(hi)]) }
        for (index, size) in [(0, 70), (69, 70), (33, 64), (40, 65)] {
            #expect(
                Merkle.inclusionProof(index: UInt64(index), size: UInt64(size), rangeHash: naive)
                    == tree.inclusionProof(index: UInt64(index), size: UInt64(size)))
        }
        #expect(
            Merkle.consistencyProof(oldSize: 37, newSize: 70, rangeHash: naive) == tree.consistencyProof(oldSize: 37))
    }
}

extension ReferenceMerkle {
    static func mthOfHashes(_ hashes: ArraySlice<Digest32>) -> Digest32 {
        if hashes.count == 1 { return hashes.first! }
        var k = 1
        while k * 2 < hashes.count { k *= 2 }
        let mid = hashes.startIndex + k
        return Merkle.nodeHash(mthOfHashes(hashes[..<mid]), mthOfHashes(hashes[mid...]))
    }
}

extension Digest32 {
    /// The digest with one byte changed, for tamper tests.
    func flipping(byte index: Int, mask: UInt8) -> Digest32 {
        var changed = bytes
        changed[index] ^= mask
        return Digest32(bytes: changed)!
    }
}
