import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Key events, encoding version 3 (docs/PROTOCOL.md, "Key events"): the SHA-256 of the ML-KEM-1024 contact key
/// the event puts in force, after the version 2 fields; versions 1 and 2 still decode and re-encode byte for
/// byte, and a rotation that names a contact key names a new one (rotation rule 8).
@Suite("Key events v3")
struct KeyEventV3Tests {
    /// The contact key of the vector: ML-KEM-1024 from the seed 00 01 … 3f (d = 00…1f, z = 20…3f).
    static func vectorContactKey() throws -> MLKEM1024.PrivateKey {
        try MLKEM1024.PrivateKey(seed: (0..<64).map { UInt8($0) })
    }

    /// The vector of docs/PROTOCOL.md, computed independently with Python's `cryptography` 50
    /// (`MLKEM1024PrivateKey.from_seed_bytes`) and `hashlib`.
    @Test func encodingVector() throws {
        let contactKey = try Self.vectorContactKey()
        #expect(Hex.encode(Array(contactKey.publicKey.rawRepresentation.prefix(16))) == Self.encapsulationKeyPrefix)
        let contactDigest = KeyEvent.contactKeyDigest(of: contactKey.publicKey)
        #expect(contactDigest.hex == Self.contactDigest, "SHA-256 of the encapsulation key: \(contactDigest.hex)")
        #expect(contactDigest == Digest32(of: contactKey.publicKey.rawRepresentation))
        let v2 = KeyEventV2Tests.vectorEvent.writtenAsVersion(2)
        let event = KeyEvent.inception(
            signingKey: v2.signingKey, nextKey: KeyEventV2Tests.generator, agreementKey: v2.agreementKey,
            origin: v2.origin, contactKeyDigest: contactDigest)
        let bytes = event.encoded
        #expect(bytes.count == 309)
        #expect(Array(bytes.prefix(2)) == [0x03, 0x00], "version 3, kind 0")
        #expect(Array(bytes[2..<277]) == Array(v2.encoded[2...]), "the version 2 fields, unchanged")
        #expect(Array(bytes[277...]) == contactDigest.bytes, "the contact key digest last")
        #expect(event.digest.hex == Self.vectorDigest, "SHA-256 of the vector: \(event.digest.hex)")
        let decoded = try #require(try KeyEvent.decode(bytes))
        #expect(decoded == event && decoded.version == 3 && decoded.hasContactKey)
        #expect(decoded.contactKeyDigest == contactDigest && decoded.encoded == bytes)
        sweepEncoding(bytes, "key event v3", decode: KeyEvent.decode)
    }
    static let encapsulationKeyPrefix = "4b94c29450111191823b3514c9ac1ea3"
    static let contactDigest = "c7b8fa0aa471d5ae18922d6ccad5b31e1d84f92ae723abfd13747018740a8530"
    static let vectorDigest = "c75f57f2f073c1e788875686d7fb7bb9a71fa9d5c6bdfe69fa4c4341b4e22d53"

    @Test func newEventsAreVersionThreeAndOlderOnesReencodeByteForByte() throws {
        let fresh = KeyEventV2Tests.vectorEvent
        #expect(fresh.version == KeyEvent.encodingVersion && fresh.version == 3 && !fresh.hasContactKey)
        #expect(fresh.encoded.count == 309 && Array(fresh.encoded[277...]) == [UInt8](repeating: 0, count: 32))
        for (version, count) in [(UInt8(1), 212), (2, 277)] {
            let old = fresh.writtenAsVersion(version).encoded
            #expect(old.count == count && old[0] == version)
            let decoded = try #require(try KeyEvent.decode(old), "version \(version)")
            #expect(decoded.version == version && decoded.encoded == old, "version \(version) re-encodes")
            #expect(decoded.digest == KeyEventDigest(of: old) && decoded.contactKeyDigest == KeyEvent.noContactKey)
        }
    }

    /// A signed version 2 inception (a wallet made before contact keys) keeps its signature and wallet id, and a
    /// version 3 rotation with a contact key may follow it.
    @Test func aVersionTwoLogTakesAVersionThreeRotation() throws {
        let keys = try KeyChain(count: 4)
        let inceptionEvent = KeyEvent.inception(
            signingKey: keys.signers[0].publicKey, nextKey: keys.signers[1].publicKey,
            agreementKey: keys.agreement.publicKey
        ).writtenAsVersion(2)
        let inception = try SignedKeyEvent(inceptionEvent, signer: keys.signers[0])
        let reread = try #require(try SignedKeyEvent.decode(inception.encoded))
        #expect(reread.event.version == 2 && reread.encoded == inception.encoded)
        var log = try KeyEventLog(inception: reread)
        #expect(log.currentContactKeyDigest == nil, "a version 2 event names no contact key")
        let contact = KeyEvent.contactKeyDigest(of: MLKEM1024.PrivateKey.generate().publicKey)
        try log.append(try keys.rotation(1, after: log.current, position: 1, contactKeyDigest: contact))
        #expect(log.current.version == 3 && log.currentContactKeyDigest == contact)
        #expect(try KeyEventLog(verifying: log.events, walletID: WalletID(inception: inceptionEvent)) == log)
    }

    /// Rule 8: a rotation that names a contact key names another one than the event before; none (zero) may
    /// follow none.
    @Test func aRotationMayNotKeepTheContactKey() throws {
        let keys = try KeyChain(count: 5)
        let first = KeyEvent.contactKeyDigest(of: MLKEM1024.PrivateKey.generate().publicKey)
        var log = try KeyEventLog(
            inception: try SignedKeyEvent(
                .inception(
                    signingKey: keys.signers[0].publicKey, nextKey: keys.signers[1].publicKey,
                    agreementKey: keys.agreement.publicKey, contactKeyDigest: first), signer: keys.signers[0]))
        #expect(log.currentContactKeyDigest == first)
        let kept = try keys.rotation(1, after: log.current, position: 1, contactKeyDigest: first)
        #expect(log.refusal(of: kept)?.code == .reusedKey)
        #expect(throws: KeyEventError.self) { try log.append(kept) }
        let second = KeyEvent.contactKeyDigest(of: MLKEM1024.PrivateKey.generate().publicKey)
        try log.append(try keys.rotation(1, after: log.current, position: 1, contactKeyDigest: second))
        #expect(log.currentContactKeyDigest == second && log.events[0].event.contactKeyDigest == first)
        // A rotation naming none is allowed (the log then has no contact key in force), and so is none after none.
        try log.append(try keys.rotation(2, after: log.current, position: 2))
        #expect(log.currentContactKeyDigest == nil)
        try log.append(try keys.rotation(3, after: log.current, position: 3))
        #expect(log.currentContactKeyDigest == nil)
    }

    /// The digest is of the raw 1,568-byte encapsulation key, and the key round-trips through it: a contact
    /// who holds the key checks it against the log before encapsulating.
    @Test func theDigestNamesTheRawEncapsulationKey() throws {
        let key = MLKEM1024.PrivateKey.generate()
        let raw = key.publicKey.rawRepresentation
        #expect(raw.count == 1568)
        let parsed = try MLKEM1024.PublicKey(rawRepresentation: raw)
        #expect(KeyEvent.contactKeyDigest(of: parsed) == Digest32(of: raw))
        let (secret, ciphertext) = parsed.encapsulate()
        #expect(try key.decapsulate(ciphertext) == secret)
        #expect(KeyEvent.contactKeyDigest(of: MLKEM1024.PrivateKey.generate().publicKey) != Digest32(of: raw))
    }
}
