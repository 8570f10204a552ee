import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore

@Suite("Ledger store")
struct LedgerStoreTests {
    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("secure-store-\(name)-\(UUID().uuidString).db")
            .path
    }

    /// A store with `count` chained entries (checkpoint bytes are placeholders: the store does not read them).
    static func filled(_ count: Int, key: SecretBytes = SecretBytes(randomCount: 32)) throws -> LedgerStore {
        let store = try LedgerStore.create(
            path: temporaryPath("fill"), key: key, walletID: WalletID(bytes: [UInt8](repeating: 1, count: 32))!)
        var previous = LedgerChain.genesisLink
        var peaks = MerkleCompactRange()
        for position in 0..<UInt64(count) {
            let entry = try LedgerEntry(
                position: position, id: .random(), kind: .keyEvent, amount: nil,
                note: "entry \(position)", time: 1_000 + Int64(position), previousLink: previous)
            peaks.append(leafHash: Merkle.leafHash(entry.encoded))
            try store.append([entry], treePeaks: peaks) { _ in LedgerStore.Seal(checkpoint: [0]) }
            previous = entry.link
        }
        return store
    }

    @Test func storedNodesGiveTheSameProofsAsTheFullTree() throws {
        let store = try Self.filled(45)
        let tree = MerkleTree(leafHashes: try store.leafHashes(to: 45))
        #expect(try store.treePeaks().root == tree.root())
        for size in UInt64(1)...45 {
            #expect(try store.rangeHash(0, size) == tree.root(size: size), "root of \(size)")
            for index in 0..<size {
                #expect(
                    try store.inclusionProof(index: index, size: size) == tree.inclusionProof(index: index, size: size),
                    "inclusion \(index) of \(size)")
            }
            for old in 1...size {
                #expect(
                    try store.consistencyProof(oldSize: old, newSize: size)
                        == tree.consistencyProof(oldSize: old, newSize: size),
                    "consistency \(old) → \(size)")
            }
        }
    }

    @Test func batchAppendStoresWhatSingleAppendsStore() throws {
        let batches = [1, 6, 17, 8] // uneven, so batches end inside and at the edges of perfect subtrees
        let count = batches.reduce(0, +)
        let single = try Self.filled(count)
        let batched = try LedgerStore.create(
            path: Self.temporaryPath("batch"), key: SecretBytes(randomCount: 32),
            walletID: WalletID(bytes: [UInt8](repeating: 1, count: 32))!)
        var peaks = MerkleCompactRange()
        var position: UInt64 = 0
        for batch in batches {
            var entries: [LedgerEntry] = []
            for _ in 0..<batch {
                entries.append(try #require(try single.entry(at: position)))
                peaks.append(leafHash: Merkle.leafHash(entries.last!.encoded))
                position += 1
            }
            try batched.appendBatch(entries, treePeaks: peaks) { _ in [UInt8(batch)] }
        }
        #expect(try batched.size() == UInt64(count))
        #expect(try batched.treePeaks() == single.treePeaks())
        #expect(try batched.leafHashes(to: UInt64(count)) == single.leafHashes(to: UInt64(count)))
        #expect(
            try batched.encodedEntries(from: 0, to: UInt64(count)) == single.encodedEntries(from: 0, to: UInt64(count)))
        let tree = MerkleTree(leafHashes: try single.leafHashes(to: UInt64(count)))
        for size in UInt64(1)...UInt64(count) {
            #expect(try batched.rangeHash(0, size) == tree.root(size: size), "root of \(size)")
            for index in 0..<size where index % 3 == 0 {
                #expect(
                    try batched.inclusionProof(index: index, size: size)
                        == tree.inclusionProof(index: index, size: size),
                    "inclusion \(index) of \(size)")
            }
        }
        // One checkpoint per batch, at its end, and the range read returns exactly those in (after, through].
        #expect(try batched.checkpointSizes() == [1, 7, 24, 32])
        #expect(try batched.latestCheckpoint()?.encoded == [8])
        #expect(try batched.encodedCheckpoints(after: 1, through: 24).map(\.size) == [7, 24])
        #expect(try batched.encodedCheckpoints(after: 24, through: 31).isEmpty)
        #expect(try single.encodedCheckpoints(after: 3, through: 6).map(\.size) == [4, 5, 6])
    }

    @Test func reopensWithKeyAndToldApartFailures() throws {
        let key = SecretBytes(randomCount: 32)
        let store = try Self.filled(3, key: key)
        let path = store.path
        let salt = try LedgerStore.fileSalt(path)
        let walletID = WalletID(bytes: [UInt8](repeating: 1, count: 32))!
        _ = try LedgerStore.open(path: path, key: key, expectedSalt: salt, walletID: walletID)
        #expect(throws: StoreError(.foreignDatabase, "")) {
            try LedgerStore.open(
                path: path, key: key, expectedSalt: [UInt8](repeating: 9, count: 16), walletID: walletID)
        }
        #expect(throws: StoreError(.foreignDatabase, "")) {
            try LedgerStore.open(
                path: path, key: key, expectedSalt: salt, walletID: WalletID(bytes: [UInt8](repeating: 2, count: 32))!)
        }
        // A wrong key with the right salt looks like corruption to SQLCipher; the key-check value (in the
        // wrapped-key file) is what names a wrong key before this point.
        #expect(throws: StoreError(.corrupted, "")) {
            try LedgerStore.open(path: path, key: SecretBytes(randomCount: 32), expectedSalt: salt, walletID: walletID)
        }
        #expect(throws: StoreError(.walletMissing, "")) {
            try LedgerStore.open(path: path + "-absent", key: key, expectedSalt: salt, walletID: walletID)
        }
        #expect(throws: StoreError(.walletExists, "")) {
            try LedgerStore.create(path: path, key: key, walletID: walletID)
        }
    }

    @Test func wrappedKeyFileRoundTripsAndRefusesEveryTruncation() throws {
        let key = SecretBytes(randomCount: 32)
        let recipient = P256.KeyAgreementPrivateKey.generate()
        var file = WrappedKeyFile(
            walletID: WalletID(bytes: [UInt8](repeating: 3, count: 32))!, key: key,
            databaseSalt: [UInt8](repeating: 4, count: 16))
        try file.wrap(key, to: recipient.publicKey)
        let bytes = file.encoded
        #expect(try WrappedKeyFile(encoded: bytes) == file)
        for length in 0..<bytes.count {
            #expect(throws: StoreError(.malformed, "")) { try WrappedKeyFile(encoded: Array(bytes.prefix(length))) }
        }
        #expect(throws: StoreError(.malformed, "")) { try WrappedKeyFile(encoded: bytes + [0]) }
    }

    /// A 2048-bit RSA modulus made with `openssl genrsa 2048`, for the type 2 (RSA-OAEP) recipient format.
    static let modulus2048 = Hex.decode(
        "cf80737355fd7639b72476c4479e3c54a62367da8f5cc8f48b021f74f4d18d78bfd6c32b30f2c3677e98718e5f1eb778"
            + "838a6b7b01cb3a849f2b8b3380bd85662c4b71fb58b7f71d977b0cfabada0b2d2cf78a7629592514fee76681b3782c0e"
            + "969a9401aa7322d2f5d9263a596a175ab61301524553c6383d3a63e998386fbd6a569ee86a05d7cc7f83c300158d9d00"
            + "d1a2a7432a5bcc37d1c9019c77bab5474da68d2172676740b647a39bfb940ae10c695f98c32270d2345daf746c5f3088"
            + "dc8b8403a54deedce2abb53118d023a0f0a3eb3fd6278adc34c3005b18681c37b6e91f04ac116bad4979e25821ff7968"
            + "3b369e89baa83f923786e69911d5bd37")!
    /// A 1024-bit modulus: below the 2048-bit floor.
    static let modulus1024 = Hex.decode(
        "9a5cbd87397510b0c5dfa46781aefa2560d938fe6492f2bcce5b89d23bb6713ec6b6010340c169612107b71b59be2f53"
            + "59fe7d9956c1ced21874410ad3b419360d23a2a77da0e1f533824f0499199555a0e7fecb225bd18b60c0821e150ec263"
            + "17debdc8726eb32be82c98ba291cf1ad4f744210efd06281034f3f79657c0905")!

    @Test func rsaRecipientsRoundTripAndRefuseEveryTruncation() throws {
        let key = SecretBytes(randomCount: 32)
        let rsa = try RSAPublicKey(modulus: Self.modulus2048, publicExponent: [1, 0, 1])
        var file = WrappedKeyFile(
            walletID: WalletID(bytes: [UInt8](repeating: 3, count: 32))!, key: key,
            databaseSalt: [UInt8](repeating: 4, count: 16))
        try file.wrap(key, to: P256.KeyAgreementPrivateKey.generate().publicKey)
        try file.wrap(key, to: rsa)
        #expect(file.rsaRecipients.count == 1)
        #expect(file.rsaRecipients[0].encryptedSeed.count == 256)
        let bytes = file.encoded
        #expect(try WrappedKeyFile(encoded: bytes) == file)
        for length in 0..<bytes.count {
            #expect(throws: StoreError(.malformed, "")) { try WrappedKeyFile(encoded: Array(bytes.prefix(length))) }
        }
        #expect(throws: StoreError(.malformed, "")) { try WrappedKeyFile(encoded: bytes + [0]) }
        // Two wraps of the same key differ (random seed and nonce): nothing about the key shows.
        var again = file
        try again.wrap(key, to: rsa)
        #expect(again.rsaRecipients[0].encryptedSeed != again.rsaRecipients[1].encryptedSeed)
    }

    /// The recovery words' copy (type 3): it round-trips, refuses every truncation, opens with the secret only,
    /// and its key-encryption key is the one docs/PROTOCOL.md gives for secret 00 … 1f and wallet id 32 × aa.
    @Test func recoveryWordsRecipientRoundTripsAndOpensWithTheSecretOnly() throws {
        let key = SecretBytes(randomCount: 32)
        let secret = SecretBytes(Array(0..<32))
        let walletID = WalletID(bytes: [UInt8](repeating: 0xaa, count: 32))!
        #expect(
            try WrappedKeyFile.keyEncryptionKey(recoverySecret: secret, walletID: walletID).copyBytes()
                == Hex.decode("1f3cab93739db3344538a9858e16bef13482a3cd7ab4af9af87c03692a6050c9"))
        var file = WrappedKeyFile(walletID: walletID, key: key, databaseSalt: [UInt8](repeating: 4, count: 16))
        try file.wrap(key, to: P256.KeyAgreementPrivateKey.generate().publicKey)
        #expect(throws: StoreError(.wrongKey, "")) { try file.unwrap(recoverySecret: secret) }
        try file.wrap(key, toRecoverySecret: secret)
        let bytes = file.encoded
        let decoded = try WrappedKeyFile(encoded: bytes)
        #expect(decoded == file)
        #expect(try decoded.unwrap(recoverySecret: secret) == key)
        #expect(throws: StoreError(.wrongKey, "")) { try decoded.unwrap(recoverySecret: SecretBytes(randomCount: 32)) }
        for length in 0..<bytes.count {
            #expect(throws: StoreError(.malformed, "")) { try WrappedKeyFile(encoded: Array(bytes.prefix(length))) }
        }
        // A second type 3 recipient is malformed: the words have one copy.
        var doubled = bytes
        doubled[8 + 1 + 32 + 16 + 16] += 1
        doubled += bytes.suffix(3 + 60)
        #expect(throws: StoreError(.malformed, "")) { try WrappedKeyFile(encoded: doubled) }
    }

    @Test func rsaRecipientKeysOutsideTheBoundsAreRefused() {
        #expect(throws: CryptoError.self) { try RSAPublicKey(modulus: Self.modulus1024, publicExponent: [1, 0, 1]) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(modulus: Self.modulus2048, publicExponent: [1]) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(modulus: Self.modulus2048, publicExponent: [2]) }
        #expect(throws: CryptoError.self) {
            try RSAPublicKey(modulus: Self.modulus2048.dropLast() + [0x02], publicExponent: [3])
        }
    }

    /// The index commitment D an append computes in its transaction, in one pass with the new rows merged in,
    /// is the D of the tables it leaves; a row of another type than the wallet writes hashes to no D at all.
    @Test func anAppendsIndexDigestIsTheDigestOfTheTablesItLeaves() throws {
        let store = try LedgerStore.create(
            path: Self.temporaryPath("index"), key: SecretBytes(randomCount: 32),
            walletID: WalletID(bytes: [UInt8](repeating: 1, count: 32))!)
        var previous = LedgerChain.genesisLink
        var peaks = MerkleCompactRange()
        var position: UInt64 = 0
        func append(
            _ kind: EntryKind, signer: UInt8, id: UInt8, sends: Bool = false,
            confirms: LedgerStore.Confirmation? = nil
        ) throws {
            let statement = StatementReference(
                signer: Digest32(bytes: [UInt8](repeating: signer, count: 32))!,
                id: StatementID(bytes: [UInt8](repeating: id, count: 16))!, payloadDigest: .random())
            let amount =
                [.deposit, .paymentOut].contains(kind)
                ? AssetAmount(
                    issuer: WalletID(bytes: [UInt8](repeating: 0x1A, count: 32))!,
                    money: try Money(minorUnits: 100, currency: .eur)) : nil
            let entry = try LedgerEntry(
                position: position, id: .random(), kind: kind, amount: amount, time: 1_000, statement: statement,
                payload: [id], previousLink: previous)
            peaks.append(leafHash: Merkle.leafHash(entry.encoded))
            let before = try store.indexDigest()
            let sent = sends ? TransferID(statement.id) : nil
            var change: LedgerStore.IndexChange?
            try store.append([entry], treePeaks: peaks, sends: sent, confirms: confirms) { index in
                change = index
                return LedgerStore.Seal(
                    checkpoint: [0],
                    outgoing: sent.map {
                        LedgerStore.Outgoing(transferID: $0, position: entry.position, signed: [1], message: nil)
                    })
            }
            #expect(change?.before == before, "entry \(position): D before the append")
            #expect(change?.after == (try store.indexDigest()), "entry \(position): D after the append")
            previous = entry.link
            position += 1
        }
        // Ids and signers out of order, so the merge inserts before, between and after the rows found.
        try append(.statementRefused, signer: 9, id: 9)
        try append(.paymentOut, signer: 5, id: 7, sends: true)
        try append(.paymentOut, signer: 5, id: 3, sends: true)
        try append(.deposit, signer: 1, id: 8)
        try append(.paymentOut, signer: 5, id: 5, sends: true)
        try append(.paymentOut, signer: 5, id: 9, sends: true)
        let receipt: LedgerStore.Confirmation = (TransferID(bytes: [UInt8](repeating: 5, count: 16))!, [7])
        try append(.confirmation, signer: 6, id: 5, confirms: receipt)
        #expect(try store.outgoing(transferID: receipt.transferID)?.status == .confirmed)
        let unchanged = try store.indexDigest()
        // The same bytes stored as text instead of a blob would hash alike yet match no lookup.
        try store.database.execute("UPDATE statements SET signer = CAST(signer AS TEXT) WHERE kind = 1")
        #expect(try store.indexDigest() == nil)
        try store.database.execute("UPDATE statements SET signer = CAST(signer AS BLOB) WHERE kind = 1")
        #expect(try store.indexDigest() == unchanged)
        try store.database.execute("UPDATE outgoing SET status = 0")
        #expect(try store.indexDigest() != unchanged)
    }
}
