import SecureCrypto

extension ClearingLimits {
    /// Leaves in one batch: 4096 syncs signed with one signature, and an inclusion proof of at most 12 hashes.
    public static let batchLeafCountMax = 4096
    /// A batch closes at the latest this long after its first leaf, so a sync waits at most a second for its
    /// cosignature (docs/CLEARING.md §2.7).
    public static let batchMillisecondsMax: Int64 = 1000
}

/// One closed sync in a batch (docs/CLEARING.md §2.7). Encoding, 81 bytes: version u8 (1) ‖ wallet id 32 ‖
/// checkpoint digest 32 (SHA-256 of the cosigned checkpoint's encoding) ‖ size u64 ‖ synced at i64 Unix ms.
public struct CosignatureLeaf: Hashable, Sendable {
    /// The synced wallet.
    public let wallet: WalletID
    /// SHA-256 of the cosigned `Checkpoint` encoding (not of its signature, which is randomized).
    public let checkpointDigest: Digest32
    /// The checkpoint's size.
    public let size: UInt64
    /// When the sync closed, in Unix milliseconds.
    public let syncedAt: Int64

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// Every leaf is exactly this long.
    public static let encodedByteCount = 81

    /// Collects the leaf.
    public init(wallet: WalletID, checkpointDigest: Digest32, size: UInt64, syncedAt: Int64) {
        self.wallet = wallet
        self.checkpointDigest = checkpointDigest
        self.size = size
        self.syncedAt = syncedAt
    }

    /// The leaf for a sync that closed with `checkpoint` at `syncedAt`.
    public init(cosigning checkpoint: Checkpoint, syncedAt: Int64) {
        self.init(
            wallet: checkpoint.walletID, checkpointDigest: Digest32(of: checkpoint.encoded), size: checkpoint.size,
            syncedAt: syncedAt)
    }

    /// Whether this leaf cosigns exactly `checkpoint`.
    public func covers(_ checkpoint: Checkpoint) -> Bool {
        wallet == checkpoint.walletID && size == checkpoint.size && checkpointDigest == Digest32(of: checkpoint.encoded)
    }

    /// The canonical encoding: the Merkle leaf.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: CosignatureLeaf.encodedByteCount)
        writer.write(CosignatureLeaf.encodingVersion)
        writer.write(wallet)
        writer.write(checkpointDigest)
        writer.write(size)
        writer.write(syncedAt)
        return writer.bytes
    }

    /// Decodes a leaf that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> CosignatureLeaf? {
        var reader = ByteReader(bytes)
        guard let leaf = try decode(from: &reader) else { return nil }
        try reader.expectEnd("cosignature leaf")
        return leaf
    }

    static func decode(from reader: inout ByteReader) throws -> CosignatureLeaf? {
        guard try reader.readVersion(encodingVersion, of: "cosignature leaf") else { return nil }
        guard let wallet = reader.read(WalletID.self), let digest = reader.read(Digest32.self),
            let size = reader.readUInt64(), let time = reader.readInt64()
        else { return nil }
        return CosignatureLeaf(wallet: wallet, checkpointDigest: digest, size: size, syncedAt: time)
    }
}

/// The head of one batch of cosigned checkpoints, signed by the clearing key under `secure-clearing-head-v1`
/// (docs/CLEARING.md §2.7). Encoding, 133 bytes: version u8 (1) ‖ issuer 32 ‖ delegation sequence u64 ‖
/// batch u64 ‖ time i64 Unix ms ‖ leaf count u32 (1 … 4096) ‖ root 32 (RFC 9162 MTH of the leaves in wallet-id
/// order) ‖ list version u64 ‖ list digest 32.
public struct ClearingTreeHead: Hashable, Sendable {
    /// The clearing's issuer.
    public let issuer: WalletID
    /// The issuer's key event that delegated the signing key.
    public let delegationSequence: UInt64
    /// The batch number, per issuer.
    public let batch: UInt64
    /// When the batch closed, in Unix milliseconds.
    public let time: Int64
    /// How many leaves.
    public let leafCount: UInt32
    /// MTH of the leaves.
    public let root: Digest32
    /// The issuer's list as it stood when the batch closed.
    public let list: ListHead

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// Every head is exactly this long.
    public static let encodedByteCount = 133

    /// Makes a head; the leaf count must be 1 … `ClearingLimits.batchLeafCountMax`.
    public init(
        issuer: WalletID, delegationSequence: UInt64, batch: UInt64, time: Int64, leafCount: UInt32, root: Digest32,
        list: ListHead
    ) throws {
        guard leafCount >= 1, leafCount <= ClearingLimits.batchLeafCountMax else {
            throw FormatError(
                .invalidValue, "a batch holds 1 to \(ClearingLimits.batchLeafCountMax) leaves, not \(leafCount)")
        }
        self.issuer = issuer
        self.delegationSequence = delegationSequence
        self.batch = batch
        self.time = time
        self.leafCount = leafCount
        self.root = root
        self.list = list
    }

    /// The canonical encoding, which is what the clearing key signs.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: ClearingTreeHead.encodedByteCount)
        writer.write(ClearingTreeHead.encodingVersion)
        writer.write(issuer)
        writer.write(delegationSequence)
        writer.write(batch)
        writer.write(time)
        writer.write(leafCount)
        writer.write(root)
        writer.write(list.version)
        writer.write(list.digest)
        return writer.bytes
    }

    /// Decodes a head that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ClearingTreeHead? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "clearing tree head") else { return nil }
        guard let issuer = reader.read(WalletID.self), let delegation = reader.readUInt64(),
            let batch = reader.readUInt64(), let time = reader.readInt64(), let count = reader.readUInt32(),
            let root = reader.read(Digest32.self), let version = reader.readUInt64(),
            let digest = reader.read(Digest32.self)
        else { return nil }
        try reader.expectEnd("clearing tree head")
        return try ClearingTreeHead(
            issuer: issuer, delegationSequence: delegation, batch: batch, time: time, leafCount: count, root: root,
            list: ListHead(version: version, digest: digest))
    }

    /// Signs the head with the clearing key.
    public func sign(with signer: MessageSigner) throws -> SignedClearingTreeHead {
        SignedClearingTreeHead(head: self, signature: try signer.sign(encoded, label: .clearingHead))
    }
}

/// A tree head with the clearing key's signature. Encoding: version u8 (1) ‖ u16 length ‖ head ‖ u8 length ‖
/// DER signature.
public struct SignedClearingTreeHead: Hashable, Sendable {
    /// What was signed.
    public let head: ClearingTreeHead
    /// ECDSA P-256 over SHA-256("secure-clearing-head-v1" ‖ 0x00 ‖ head encoding).
    public let signature: ECDSASignature

    /// Pairs them; check `isValid(signedBy:)` before use.
    public init(head: ClearingTreeHead, signature: ECDSASignature) {
        self.head = head
        self.signature = signature
    }

    /// Whether `clearingKey` signed it.
    public func isValid(signedBy clearingKey: P256.PublicKey) -> Bool {
        SignatureLabel.clearingHead.verify(signature, of: head.encoded, by: clearingKey)
    }

    /// The encoding.
    public var encoded: [UInt8] {
        ClearingSigned.encode(body: head.encoded, bodyMax: ClearingTreeHead.encodedByteCount, signature: signature)
    }

    /// Decodes a signed head that fills `bytes` exactly; the signature is parsed, not verified.
    public static func decode(_ bytes: [UInt8]) throws -> SignedClearingTreeHead? {
        var reader = ByteReader(bytes)
        guard let signed = try decode(from: &reader) else { return nil }
        try reader.expectEnd("signed clearing tree head")
        return signed
    }

    static func decode(from reader: inout ByteReader) throws -> SignedClearingTreeHead? {
        guard try reader.readVersion(ClearingSigned.encodingVersion, of: "signed clearing tree head") else {
            return nil
        }
        guard let body = try reader.readPrefixed16(max: ClearingTreeHead.encodedByteCount, field: "tree head"),
            let der = try reader.readPrefixed8(max: 72, field: "signature")
        else { return nil }
        guard let head = try ClearingTreeHead.decode(body) else {
            throw FormatError(.invalidValue, "the head inside a signed clearing tree head is truncated")
        }
        guard let signature = try? ECDSASignature(der: der) else {
            throw FormatError(.invalidValue, "the tree head signature is not a strict DER ECDSA signature")
        }
        return SignedClearingTreeHead(head: head, signature: signature)
    }
}

/// Why a cosignature does not hold. A value, never thrown.
public enum CosignatureProblem: UInt8, Hashable, Sendable, CaseIterable {
    /// The head's signature does not verify under the clearing key, or it names another issuer.
    case headInvalid = 1
    /// The leaf's index is not below the head's leaf count.
    case indexOutOfRange = 2
    /// The inclusion proof does not lead from the leaf to the head's root.
    case proofInvalid = 3
    /// The leaf is not of the checkpoint it is presented for.
    case wrongCheckpoint = 4
}

/// The clearing's cosignature of one wallet's checkpoint (docs/CLEARING.md §2.7): the signed tree head, the
/// leaf, its index and its RFC 9162 inclusion proof. Encoding: version u8 (1) ‖ signed tree head ‖ leaf (81)
/// ‖ index u32 ‖ proof (u8 count ≤ 65, then 32-byte hashes).
public struct Cosignature: Hashable, Sendable {
    /// The batch's signed head.
    public let head: SignedClearingTreeHead
    /// The wallet's leaf.
    public let leaf: CosignatureLeaf
    /// Its index among the batch's leaves.
    public let index: UInt32
    /// Its inclusion proof in the batch's tree.
    public let proof: [Digest32]

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// 1 + (1 + 2 + 133 + 1 + 72) + 81 + 4 + 1 + 65 × 32 bytes.
    public static let encodedByteCountMax = 2376

    /// Collects the parts; `problem(clearingKey:issuer:)` checks them.
    public init(head: SignedClearingTreeHead, leaf: CosignatureLeaf, index: UInt32, proof: [Digest32]) throws {
        guard proof.count <= Merkle.proofHashCountMax else {
            throw FormatError(.invalidValue, "an inclusion proof is at most \(Merkle.proofHashCountMax) hashes")
        }
        self.head = head
        self.leaf = leaf
        self.index = index
        self.proof = proof
    }

    /// Why the cosignature does not hold for `issuer`'s clearing key (and, when given, for `checkpoint`), or
    /// nil when it does.
    public func problem(clearingKey: P256.PublicKey, issuer: WalletID, checkpoint: Checkpoint? = nil)
        -> CosignatureProblem?
    {
        guard head.isValid(signedBy: clearingKey), head.head.issuer == issuer else { return .headInvalid }
        guard index < head.head.leafCount else { return .indexOutOfRange }
        guard
            Merkle.verifyInclusion(
                leafHash: Merkle.leafHash(leaf.encoded), index: UInt64(index), size: UInt64(head.head.leafCount),
                proof: proof, root: head.head.root)
        else { return .proofInvalid }
        if let checkpoint, !leaf.covers(checkpoint) { return .wrongCheckpoint }
        return nil
    }

    /// The encoding.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 300 + proof.count * Digest32.byteCount)
        writer.write(Cosignature.encodingVersion)
        writer.write(raw: head.encoded)
        writer.write(raw: leaf.encoded)
        writer.write(index)
        writer.write(proof: proof)
        return writer.bytes
    }

    /// Decodes a cosignature that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> Cosignature? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "cosignature") else { return nil }
        guard let head = try SignedClearingTreeHead.decode(from: &reader),
            let leaf = try CosignatureLeaf.decode(from: &reader), let index = reader.readUInt32(),
            let proof = try reader.readProof()
        else { return nil }
        try reader.expectEnd("cosignature")
        return try Cosignature(head: head, leaf: leaf, index: index, proof: proof)
    }
}

/// The leaves of the batch being filled. `close` sorts them by wallet id, builds the tree, signs the head
/// once and returns every wallet's cosignature.
public struct CosignatureBatch: Sendable {
    /// The leaves, one per wallet: a wallet that syncs twice in one batch is cosigned at its later checkpoint.
    public private(set) var leaves: [WalletID: CosignatureLeaf] = [:]
    /// When the first leaf arrived, in Unix milliseconds.
    public private(set) var openedAt: Int64?

    /// An empty batch.
    public init() {}

    /// Whether the batch must close now: full, or open for `ClearingLimits.batchMillisecondsMax`.
    public func isDue(now: Int64) -> Bool {
        guard let openedAt else { return false }
        return leaves.count >= ClearingLimits.batchLeafCountMax || now - openedAt >= ClearingLimits.batchMillisecondsMax
    }

    /// Adds a leaf; false when the batch is full and must close first (a new wallet's leaf is not taken).
    @discardableResult
    public mutating func add(_ leaf: CosignatureLeaf, now: Int64) -> Bool {
        guard leaves[leaf.wallet] != nil || leaves.count < ClearingLimits.batchLeafCountMax else { return false }
        if let held = leaves[leaf.wallet], held.size > leaf.size { return true }
        leaves[leaf.wallet] = leaf
        if openedAt == nil { openedAt = now }
        return true
    }

    /// Signs the batch as number `batch` of `issuer`'s clearing at `time`, carrying `list`, and empties it.
    /// Nil when there is nothing to sign.
    public mutating func close(
        issuer: WalletID, delegationSequence: UInt64, batch: UInt64, time: Int64, list: ListHead,
        signer: MessageSigner
    ) throws -> [Cosignature]? {
        guard !leaves.isEmpty else { return nil }
        let sorted = leaves.values.sorted { $0.wallet.bytes.lexicographicallyPrecedes($1.wallet.bytes) }
        let tree = MerkleTree(leafHashes: sorted.map { Merkle.leafHash($0.encoded) })
        let head = try ClearingTreeHead(
            issuer: issuer, delegationSequence: delegationSequence, batch: batch, time: time,
            leafCount: UInt32(sorted.count), root: tree.root(), list: list
        ).sign(with: signer)
        leaves = [:]
        openedAt = nil
        return try sorted.enumerated().map { index, leaf in
            try Cosignature(
                head: head, leaf: leaf, index: UInt32(index), proof: tree.inclusionProof(index: UInt64(index)))
        }
    }
}
