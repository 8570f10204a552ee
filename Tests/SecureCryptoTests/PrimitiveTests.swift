import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// Hex to bytes for vectors written in the tests; a typo is our bug, so it traps.
func bytes(_ hex: String) -> [UInt8] {
    guard let decoded = Hex.decode(hex) else { preconditionFailure("bad hex in a test vector: \(hex.prefix(20))…") }
    return decoded
}

@Suite("SHA-3 and SHAKE (FIPS 202 short messages)")
struct SHA3Tests {
    @Test func sha3_256() {
        #expect(Hex.encode(SHA3_256.hash([])) == "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a")
        #expect(
            Hex.encode(SHA3_256.hash(Array("abc".utf8)))
                == "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532")
    }

    @Test func sha3_512() {
        #expect(
            Hex.encode(SHA3_512.hash(Array("abc".utf8)))
                == "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0"
        )
    }

    @Test func shake() {
        #expect(
            Hex.encode(SHAKE128.hash([], outputByteCount: 32))
                == "7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26")
        #expect(
            Hex.encode(SHAKE256.hash([], outputByteCount: 64))
                == "46b9dd2b0ba88d13233b3feb743eeb243fcd52ea62b81b82b50c27646ed5762fd75dc4ddd8c0f200cb05019d67b592f6fc821c49479ab48640292eacb3b7c4be"
        )
    }

    @Test func shakeIsPrefixConsistent() {
        let long = SHAKE128.hash(Array("prefix".utf8), outputByteCount: 1000)
        let short = SHAKE128.hash(Array("prefix".utf8), outputByteCount: 504)
        #expect(Array(long.prefix(504)) == short)
    }
}

@Suite("HMAC-SHA256 (RFC 4231) and HKDF-SHA256 (RFC 5869)")
struct MACTests {
    @Test func rfc4231() {
        #expect(
            Hex.encode(
                HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8))
            )
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", "RFC 4231 case 1")
        #expect(
            Hex.encode(
                HMACSHA256.authenticationCode(
                    key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "RFC 4231 case 2")
        #expect(
            Hex.encode(
                HMACSHA256.authenticationCode(
                    key: [UInt8](repeating: 0xaa, count: 131),
                    message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", "RFC 4231 case 6")
    }

    @Test func rfc5869() throws {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let case1 = try HKDFSHA256.deriveKey(
            inputKeyMaterial: ikm, salt: Array(0...12), info: Array(0xf0...0xf9), outputByteCount: 42)
        #expect(
            Hex.encode(case1) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
            "RFC 5869 case 1")
        let case3 = try HKDFSHA256.deriveKey(
            inputKeyMaterial: SecretBytes(ikm), salt: [], info: [], outputByteCount: 42)
        #expect(
            Hex.encode(case3) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
            "RFC 5869 case 3")
    }

    @Test func hkdfRefusesBadLengths() {
        #expect(throws: CryptoError(.invalidLength, "")) {
            try HKDFSHA256.deriveKey(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: 0)
        }
        #expect(throws: CryptoError(.invalidLength, "")) {
            try HKDFSHA256.deriveKey(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: 8161)
        }
    }
}

@Suite("AES-256-GCM (McGrew–Viega test case 16)")
struct AESGCMTests {
    let key = bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
    let nonce = bytes("cafebabefacedbaddecaf888")
    let plaintext = bytes(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
    )
    let associatedData = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    let sealed = bytes(
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f66276fc6ece0f4e1768cddf8853bb2d551b"
    )

    @Test func knownVector() throws {
        #expect(try AES256GCM.seal(plaintext, key: key, nonce: nonce, associatedData: associatedData) == sealed)
        #expect(
            try AES256GCM.open(sealed, key: SecretBytes(key), nonce: nonce, associatedData: associatedData) == plaintext
        )
    }

    @Test func everyFlippedBitIsRefused() {
        for index in 0..<sealed.count {
            for bit in 0..<8 {
                var tampered = sealed
                tampered[index] ^= 1 << bit
                #expect(throws: CryptoError(.authenticationFailed, ""), "byte \(index) bit \(bit)") {
                    try AES256GCM.open(tampered, key: key, nonce: nonce, associatedData: associatedData)
                }
            }
        }
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try AES256GCM.open(sealed, key: key, nonce: nonce, associatedData: associatedData + [0])
        }
    }

    @Test func everyTruncationIsRefused() {
        for length in 0..<sealed.count {
            #expect(throws: CryptoError.self) {
                try AES256GCM.open(Array(sealed.prefix(length)), key: key, nonce: nonce, associatedData: associatedData)
            }
        }
    }

    @Test func emptyMessageAndBadSizes() throws {
        let sealedEmpty = try AES256GCM.seal([], key: key, nonce: nonce, associatedData: [])
        #expect(sealedEmpty.count == 16)
        #expect(try AES256GCM.open(sealedEmpty, key: key, nonce: nonce, associatedData: []) == [])
        #expect(throws: CryptoError(.invalidKey, "")) {
            try AES256GCM.seal([], key: Array(key.prefix(16)), nonce: nonce, associatedData: [])
        }
        #expect(throws: CryptoError(.invalidLength, "")) {
            try AES256GCM.seal([], key: key, nonce: [0], associatedData: [])
        }
    }
}

@Suite("X25519 (RFC 7748) and P-256 ECDH")
struct KeyAgreementTests {
    @Test func rfc7748Section5_2() throws {
        let scalar = try X25519.PrivateKey(
            rawRepresentation: bytes("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"))
        let point = try X25519.PublicKey(
            rawRepresentation: bytes("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"))
        #expect(
            Hex.encode(try scalar.sharedSecret(with: point).copyBytes())
                == "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
    }

    @Test func rfc7748Section6_1() throws {
        let alice = try X25519.PrivateKey(
            rawRepresentation: bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bob = try X25519.PrivateKey(
            rawRepresentation: bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        #expect(
            Hex.encode(alice.publicKey.rawRepresentation)
                == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(
            Hex.encode(bob.publicKey.rawRepresentation)
                == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        #expect(Hex.encode(try alice.sharedSecret(with: bob.publicKey).copyBytes()) == shared)
        #expect(Hex.encode(try bob.sharedSecret(with: alice.publicKey).copyBytes()) == shared)
    }

    @Test func lowOrderPointsAreRefused() throws {
        let key = X25519.PrivateKey.generate()
        // u = 0 and u = 1 are points of small order; the shared secret would be all zeros.
        for u in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            #expect(throws: CryptoError(.invalidKey, "")) {
                try key.sharedSecret(with: try X25519.PublicKey(rawRepresentation: u))
            }
        }
        #expect(throws: CryptoError(.invalidKey, "")) { try X25519.PublicKey(rawRepresentation: [0]) }
        #expect(throws: CryptoError(.invalidKey, "")) { try X25519.PrivateKey(rawRepresentation: [0]) }
    }

    @Test func p256Agreement() throws {
        let alice = P256.KeyAgreementPrivateKey.generate()
        let bob = P256.KeyAgreementPrivateKey.generate()
        let one = try alice.sharedSecret(with: bob.publicKey)
        #expect(one.count == 32)
        #expect(one == (try bob.sharedSecret(with: alice.publicKey)))
        #expect(alice.publicKey != bob.publicKey)
    }
}

@Suite("SecretBytes and ConstantTime")
struct SecretTests {
    @Test func constantTimeEqual() {
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equal([UInt8](), [UInt8]()))
        #expect(ConstantTime.equal([9, 8][...], [9, 8]))
        for index in 0..<64 {
            var changed = [UInt8](repeating: 7, count: 64)
            changed[index] = 0x87
            #expect(!ConstantTime.equal(changed, [UInt8](repeating: 7, count: 64)))
        }
    }

    @Test func secretBytes() {
        let random = SecretBytes(randomCount: 32)
        #expect(random.count == 32)
        #expect(random != SecretBytes(randomCount: 32))
        #expect(SecretBytes([1, 2]) == SecretBytes([1, 2]))
        #expect(SecretBytes([1, 2]).description == "SecretBytes(2 bytes)")
        #expect(SecretBytes([]).count == 0)
    }
}

@Suite("P-256 verifier reused across signatures")
struct P256VerifierTests {
    /// n − s, so the mirrored signature is the high-s twin of a valid one.
    static func mirrored(_ signature: ECDSASignature) throws -> ECDSASignature {
        let order = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
        var high = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(order[index]) - Int(signature.s[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            high[index] = UInt8(difference)
        }
        return try ECDSASignature(raw: signature.r + high)
    }

    @Test func agreesWithTheOneShotCheckOnEveryCase() throws {
        let signer = try SoftwareSigner()
        let other = try SoftwareSigner()
        let verifier = try #require(signer.publicKey.verifier())
        for round in 0..<12 {
            let payload = Array("statement \(round)".utf8)
            let label = SignatureLabel("secure-test-v1")
            let digest = label.digest(of: payload)
            let signature = try signer.sign(payload, label: label)
            let cases: [(String, ECDSASignature, [UInt8])] = [
                ("valid", signature, digest),
                ("high s", try Self.mirrored(signature), digest),
                ("other digest", signature, SHA256.hash(digest)),
                ("other key", try other.sign(payload, label: label), digest),
                ("short digest", signature, Array(digest.prefix(31))),
            ]
            // The same verifier alternates between good and bad inputs: a failure must not stick.
            for (name, candidate, candidateDigest) in cases {
                #expect(
                    verifier.isValidSignature(candidate, digest: candidateDigest)
                        == signer.publicKey.isValidSignature(candidate, digest: candidateDigest),
                    "\(name), round \(round)")
            }
            #expect(verifier.isValidSignature(signature, digest: digest), "valid again, round \(round)")
        }
    }
}
