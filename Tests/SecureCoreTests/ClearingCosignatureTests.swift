import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Cosignatures (docs/CLEARING.md §2.7): a batch of leaves sorted by wallet id, one signed head, one
/// inclusion proof per wallet; each verifies, and fails for a tampered leaf, head or proof or the wrong key.
@Suite("Clearing cosignatures")
struct ClearingCosignatureTests {
    let clearing = try! SoftwareSigner()
    let issuer: WalletID = Fixture.id(0x1A)

    func leaf(_ byte: UInt8, size: UInt64 = 5) -> CosignatureLeaf {
        CosignatureLeaf(
            wallet: Fixture.id(byte), checkpointDigest: Fixture.id(byte ^ 0xFF), size: size, syncedAt: 1_000)
    }

    func batch(_ count: Int) throws -> [Cosignature] {
        var batch = CosignatureBatch()
        for byte in (0..<count).reversed() {
            let added = batch.add(leaf(UInt8(byte + 1)), now: 0)
            #expect(added)
        }
        return try #require(
            try batch.close(
                issuer: issuer, delegationSequence: 1, batch: 9, time: 2_000, list: .empty, signer: clearing))
    }

    @Test("Every wallet of a batch gets a cosignature that verifies, in wallet-id order", arguments: [1, 2, 3, 7, 16])
    func verifies(count: Int) throws {
        let cosignatures = try batch(count)
        #expect(cosignatures.count == count)
        for (index, cosignature) in cosignatures.enumerated() {
            #expect(cosignature.index == UInt32(index) && cosignature.leaf == leaf(UInt8(index + 1)))
            #expect(cosignature.problem(clearingKey: clearing.publicKey, issuer: issuer) == nil, "leaf \(index)")
            #expect(try Cosignature.decode(cosignature.encoded) == cosignature)
        }
    }

    @Test("A tampered leaf, head, index or proof, another key or issuer fails")
    func tampering() throws {
        let cosignature = try batch(5)[2]
        let key = clearing.publicKey
        let other = try Cosignature(head: cosignature.head, leaf: leaf(9), index: 2, proof: cosignature.proof)
        #expect(other.problem(clearingKey: key, issuer: issuer) == .proofInvalid)
        let moved = try Cosignature(head: cosignature.head, leaf: cosignature.leaf, index: 3, proof: cosignature.proof)
        #expect(moved.problem(clearingKey: key, issuer: issuer) == .proofInvalid)
        let outside = try Cosignature(
            head: cosignature.head, leaf: cosignature.leaf, index: 5, proof: cosignature.proof)
        #expect(outside.problem(clearingKey: key, issuer: issuer) == .indexOutOfRange)
        var proof = cosignature.proof
        proof[0] = Fixture.id(0x44)
        #expect(
            try Cosignature(head: cosignature.head, leaf: cosignature.leaf, index: 2, proof: proof)
                .problem(clearingKey: key, issuer: issuer) == .proofInvalid)
        let head = cosignature.head.head
        let forged = SignedClearingTreeHead(
            head: try ClearingTreeHead(
                issuer: head.issuer, delegationSequence: head.delegationSequence, batch: head.batch + 1,
                time: head.time, leafCount: head.leafCount, root: head.root, list: head.list),
            signature: cosignature.head.signature)
        #expect(
            try Cosignature(head: forged, leaf: cosignature.leaf, index: 2, proof: cosignature.proof)
                .problem(clearingKey: key, issuer: issuer) == .headInvalid)
        #expect(cosignature.problem(clearingKey: try SoftwareSigner().publicKey, issuer: issuer) == .headInvalid)
        #expect(cosignature.problem(clearingKey: key, issuer: Fixture.id(0x1B)) == .headInvalid)
    }

    @Test("A cosignature covers exactly the checkpoint of its leaf")
    func coversCheckpoint() throws {
        var wallet = try SoftwareWallet(seed: 3)
        let checkpoint = try wallet.checkpoint().checkpoint
        var batch = CosignatureBatch()
        batch.add(CosignatureLeaf(cosigning: checkpoint, syncedAt: 5_000), now: 0)
        batch.add(leaf(0x01), now: 0)
        let cosignatures = try #require(
            try batch.close(
                issuer: issuer, delegationSequence: 1, batch: 1, time: 6_000, list: .empty, signer: clearing))
        let mine = try #require(cosignatures.first { $0.leaf.wallet == wallet.walletID })
        #expect(mine.problem(clearingKey: clearing.publicKey, issuer: issuer, checkpoint: checkpoint) == nil)
        try wallet.append(EntryDraft(kind: .rollbackAccepted, amount: nil, statement: nil, payload: [1]))
        let later = try wallet.checkpoint().checkpoint
        #expect(mine.problem(clearingKey: clearing.publicKey, issuer: issuer, checkpoint: later) == .wrongCheckpoint)
    }

    @Test("A batch holds one leaf per wallet, closes when full or after a second, and refuses more")
    func batchLimits() throws {
        var batch = CosignatureBatch()
        #expect(!batch.isDue(now: 0))
        batch.add(leaf(1, size: 5), now: 100)
        batch.add(leaf(1, size: 7), now: 200)
        batch.add(leaf(1, size: 6), now: 300)
        #expect(batch.leaves.count == 1 && batch.leaves[Fixture.id(1)]?.size == 7)
        #expect(!batch.isDue(now: 1_099) && batch.isDue(now: 1_100))
        var full = CosignatureBatch()
        for index in 0..<ClearingLimits.batchLeafCountMax {
            let id = WalletID(bytes: [UInt8(index >> 8), UInt8(index & 0xFF)] + [UInt8](repeating: 0, count: 30))!
            let added = full.add(
                CosignatureLeaf(wallet: id, checkpointDigest: Fixture.id(0), size: 1, syncedAt: 0), now: 0)
            #expect(added)
        }
        let refused = !full.add(leaf(0xFF), now: 0)
        #expect(full.isDue(now: 0) && refused)
        #expect(throws: FormatError.self) {
            try ClearingTreeHead(
                issuer: issuer, delegationSequence: 1, batch: 1, time: 0, leafCount: 4097, root: Fixture.id(0),
                list: .empty)
        }
    }

    @Test("Leaves, heads and cosignatures round-trip; every truncation and extension is refused")
    func encodings() throws {
        let cosignature = try batch(3)[1]
        ClearingEncodingSweep.sweep(cosignature.leaf.encoded, "leaf") { try CosignatureLeaf.decode($0) }
        #expect(try CosignatureLeaf.decode(cosignature.leaf.encoded) == cosignature.leaf)
        ClearingEncodingSweep.sweep(cosignature.head.head.encoded, "head") { try ClearingTreeHead.decode($0) }
        #expect(try ClearingTreeHead.decode(cosignature.head.head.encoded) == cosignature.head.head)
        ClearingEncodingSweep.sweep(cosignature.head.encoded, "signed head") { try SignedClearingTreeHead.decode($0) }
        ClearingEncodingSweep.sweep(cosignature.encoded, "cosignature") { try Cosignature.decode($0) }
        #expect(cosignature.encoded.count <= Cosignature.encodedByteCountMax)
    }

    @Test("The documented vectors: a leaf and a head's signed payload")
    func vectors() throws {
        let leaf = CosignatureLeaf(
            wallet: Fixture.id(0xA1), checkpointDigest: Fixture.id(0xC0), size: 12, syncedAt: 1_709_294_400_000)
        #expect(
            Hex.encode(leaf.encoded)
                == "01a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0000000000000000c0000018df9e2b200"
        )
        #expect(Merkle.leafHash(leaf.encoded).hex == "748c24e8c16cff25688d152b34de0723961722f2f36dba02a8632ec0ed895508")
        let head = try ClearingTreeHead(
            issuer: Fixture.id(0x1A), delegationSequence: 3, batch: 42, time: 1_709_294_401_000, leafCount: 1,
            root: Merkle.leafHash(leaf.encoded),
            list: ListHead.empty.appending(
                .add(wallet: Fixture.id(0xA1), grounds: .unsynced, evidence: Fixture.id(0x00))))
        #expect(
            Hex.encode(head.encoded)
                == "011a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a0000000000000003000000000000002a0000018df9e2b5e800000001748c24e8c16cff25688d152b34de0723961722f2f36dba02a8632ec0ed8955080000000000000001caa70b57680135c2e62da3848cef6ad2f1469561d53d4d7e6fdea1bc46e61530"
        )
    }
}
