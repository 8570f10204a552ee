import SecureCrypto
import Testing

@testable import SecureCore

/// Key events, encoding version 2 (docs/PROTOCOL.md, "Key events"): the origin of the key put in force and the
/// recovery commitment after the version 1 fields; version 1 still decodes and re-encodes byte for byte.
/// Version 3 (the contact key) is in KeyEventV3Tests.
@Suite("Key events v2")
struct KeyEventV2Tests {
    static let generator = try! P256.PublicKey(
        x963: Hex.decode(
            "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")!)

    /// The vector of docs/PROTOCOL.md: an inception with the generator point as signing, next and agreement
    /// key, origin attested with evidence digest 32 × `ab`, no recovery commitment.
    @Test func encodingVector() throws {
        let event = Self.vectorEvent.writtenAsVersion(2)
        let bytes = event.encoded
        #expect(bytes.count == 277)
        #expect(Array(bytes.prefix(2)) == [0x02, 0x00], "version 2, kind 0")
        #expect(bytes[212] == 2, "origin code 2, attested")
        #expect(Array(bytes[213..<245]) == [UInt8](repeating: 0xAB, count: 32))
        #expect(Array(bytes[245...]) == [UInt8](repeating: 0, count: 32), "no recovery commitment")
        #expect(Array(bytes[1..<212]) == Array(Self.v1(event)[1...]), "the version 1 fields, unchanged")
        #expect(event.digest.hex == Self.vectorDigest, "SHA-256 of the vector: \(event.digest.hex)")
        let decoded = try #require(try KeyEvent.decode(bytes))
        #expect(decoded == event && decoded.version == 2 && decoded.encoded == bytes, "re-encodes byte for byte")
        #expect(!decoded.hasContactKey && decoded.contactKeyDigest == KeyEvent.noContactKey)
        sweepEncoding(bytes, "key event v2", decode: KeyEvent.decode)
    }
    static let vectorDigest = "074c9a08cc9beb57e3e988bf0b0ea6e3ad5423cbf9f6816998df45064789d8f0"
    /// The vector's event as new events are written (version 3, no contact key).
    static let vectorEvent = KeyEvent.inception(
        signingKey: generator, nextKey: generator, agreementKey: generator,
        origin: .attested(Digest32(exactly: [UInt8](repeating: 0xAB, count: 32))))

    /// The same event in version 1, as logs written before version 2 hold it.
    static func v1(_ event: KeyEvent) -> [UInt8] {
        KeyEvent(
            kind: event.kind, sequence: event.sequence, previousEvent: event.previousEvent,
            signingKey: event.signingKey, nextKeyDigest: event.nextKeyDigest, agreementKey: event.agreementKey,
            ledgerPosition: event.ledgerPosition, version: 1, origin: .notRecorded
        ).encoded
    }

    @Test func versionOneStillDecodesAndReencodes() throws {
        let event = KeyEvent.inception(
            signingKey: Self.generator, nextKey: Self.generator, agreementKey: Self.generator)
        let old = Self.v1(event)
        #expect(old.count == 212 && old[0] == 1)
        let decoded = try #require(try KeyEvent.decode(old))
        #expect(decoded.version == 1 && decoded.origin == .notRecorded && decoded.encoded == old)
        #expect(decoded.recoveryCommitment == KeyEvent.noRecoveryCommitment)
        sweepEncoding(old, "key event v1", decode: KeyEvent.decode)
    }

    @Test func unknownVersionsAndOriginsAreRefused() throws {
        var bytes = KeyEvent.inception(
            signingKey: Self.generator, nextKey: Self.generator, agreementKey: Self.generator, origin: .modulesWord
        ).encoded
        #expect(try KeyEvent.decode(bytes)?.origin == .modulesWord)
        for version: UInt8 in [0, 4, 255] {
            var changed = bytes
            changed[0] = version
            #expect(throws: FormatError.self, "version \(version)") { try KeyEvent.decode(changed) }
        }
        bytes[212] = 3
        #expect(throws: FormatError.self, "origin 3 is reserved") { try KeyEvent.decode(bytes) }
        bytes[212] = 2
        #expect(throws: FormatError.self, "attested with a zero digest") { try KeyEvent.decode(bytes) }
        bytes[212] = 0
        bytes[213] = 1
        #expect(throws: FormatError.self, "unproven with a digest") { try KeyEvent.decode(bytes) }
    }

    @Test func originsRoundTrip() throws {
        for origin: KeyOrigin in [.unproven, .modulesWord, .attested(Digest32(of: [1, 2, 3]))] {
            let event = KeyEvent.inception(
                signingKey: Self.generator, nextKey: Self.generator, agreementKey: Self.generator, origin: origin)
            #expect(try KeyEvent.decode(event.encoded) == event, "\(origin.description)")
        }
    }
}
