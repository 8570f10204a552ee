import Foundation
import SecureCrypto
import Testing

/// The KEM fields of cryptography-vectors' HPKE post-quantum vectors: skRm is the seed, pkRm the public
/// key, ikmE the encapsulation randomness, enc the ciphertext, shared_secret the KEM output.
@Suite("HPKE post-quantum vectors (KEM fields)")
struct HPKEVectorTests {
    struct Record {
        let name: String
        let kemID: Int
        let seed: [UInt8], publicKey: [UInt8], randomness: [UInt8], ciphertext: [UInt8], sharedSecret: [UInt8]
    }

    static func records(kemIDs: Set<Int>) throws -> [Record] {
        let text = try Oracles.vectorFile("HPKE/hpke-pq-test-vectors.json")
        guard let array = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else {
            throw Oracles.Missing(description: "hpke-pq-test-vectors.json is not a JSON array of objects")
        }
        var result: [Record] = []
        for (index, object) in array.enumerated() {
            guard let kemID = object["kem_id"] as? Int, kemIDs.contains(kemID) else { continue }
            let name = "hpke-pq-test-vectors.json[\(index)] kem_id 0x\(String(kemID, radix: 16))"
            func field(_ key: String) throws -> [UInt8] {
                guard let hex = object[key] as? String, let decoded = Hex.decode(hex) else {
                    throw Oracles.Missing(description: "\(name): field \(key) missing or not hex")
                }
                return decoded
            }
            result.append(
                Record(
                    name: name, kemID: kemID, seed: try field("skRm"), publicKey: try field("pkRm"),
                    randomness: try field("ikmE"), ciphertext: try field("enc"),
                    sharedSecret: try field("shared_secret")))
        }
        return result
    }

    @Test func xwing() throws {
        let records = try Self.records(kemIDs: [0x647a])
        #expect(records.count >= 1, "no X-Wing (0x647a) records found")
        for record in records {
            let key = try XWing.PrivateKey(seed: record.seed)
            #expect(key.publicKey.rawRepresentation == record.publicKey, "\(record.name): pkRm from skRm")
            let publicKey = try XWing.PublicKey(rawRepresentation: record.publicKey)
            let (secret, ciphertext) = try publicKey._encapsulate(seed: record.randomness)
            #expect(ciphertext == record.ciphertext, "\(record.name): enc")
            #expect(secret.copyBytes() == record.sharedSecret, "\(record.name): shared_secret from encapsulation")
            #expect(
                try key.decapsulate(record.ciphertext).copyBytes() == record.sharedSecret,
                "\(record.name): shared_secret from decapsulation")
        }
    }

    @Test func mlkem() throws {
        let records = try Self.records(kemIDs: [0x40, 0x41, 0x42])
        #expect(Set(records.map(\.kemID)) == [0x40, 0x41, 0x42], "expected ML-KEM-512, -768 and -1024 records")
        for record in records {
            switch record.kemID {
            case 0x40: try check(MLKEM512.self, record)
            case 0x41: try check(MLKEM768.self, record)
            default: try check(MLKEM1024.self, record)
            }
        }
    }

    func check<P>(_ kem: MLKEM<P>.Type, _ record: Record) throws {
        let key = try MLKEM<P>.PrivateKey(seed: record.seed)
        #expect(key.publicKey.rawRepresentation == record.publicKey, "\(record.name): pkRm from skRm")
        let (secret, ciphertext) = try MLKEM<P>.PublicKey(rawRepresentation: record.publicKey)._encapsulate(
            message: record.randomness)
        #expect(ciphertext == record.ciphertext, "\(record.name): enc")
        #expect(secret.copyBytes() == record.sharedSecret, "\(record.name): shared_secret from encapsulation")
        #expect(
            try key.decapsulate(record.ciphertext).copyBytes() == record.sharedSecret,
            "\(record.name): shared_secret from decapsulation")
    }
}

@Suite("X-Wing behaviour")
struct XWingTests {
    /// The low-order X25519 u-coordinates (0, 1, the two order-8 points, p − 1, and non-canonical p, p + 1).
    static let lowOrderPoints: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        bytes("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        bytes("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
        bytes("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        bytes("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        bytes("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    ]

    @Test func roundTrip() throws {
        let key = XWing.PrivateKey.generate()
        #expect(key.publicKey.rawRepresentation.count == 1216)
        let publicKey = try XWing.PublicKey(rawRepresentation: key.publicKey.rawRepresentation)
        let (secret, ciphertext) = publicKey.encapsulate()
        #expect(ciphertext.count == 1120 && secret.count == 32)
        #expect(try key.decapsulate(ciphertext) == secret)
        #expect(try XWing.PrivateKey(seed: key.seed.copyBytes()).publicKey == key.publicKey)
    }

    @Test func lowOrderCiphertextShareFailsCleanly() throws {
        let key = XWing.PrivateKey.generate()
        let (_, ciphertext) = key.publicKey.encapsulate()
        for point in Self.lowOrderPoints {
            let tampered = Array(ciphertext.prefix(1088)) + point
            #expect(throws: CryptoError(.invalidCiphertext, ""), "ct_X = \(Hex.encode(point))") {
                try key.decapsulate(tampered)
            }
        }
    }

    @Test func lowOrderPublicKeyShareIsRefused() throws {
        let key = XWing.PrivateKey.generate()
        for point in Self.lowOrderPoints {
            let tampered = Array(key.publicKey.rawRepresentation.prefix(1184)) + point
            #expect(throws: CryptoError(.invalidKey, ""), "pk_X = \(Hex.encode(point))") {
                try XWing.PublicKey(rawRepresentation: tampered)
            }
        }
    }

    /// The parse-time list of low-order points agrees with OpenSSL's refusal of an all-zero X25519
    /// result, for every listed point with and without the ignored top bit, and for random points.
    @Test func lowOrderListAgreesWithOpenSSL() throws {
        let key = X25519.PrivateKey.generate()
        let mlkemPart = Array(XWing.PrivateKey.generate().publicKey.rawRepresentation.prefix(1184))
        var candidates = Self.lowOrderPoints
        candidates += Self.lowOrderPoints.map { point in
            var flipped = point; flipped[31] ^= 0x80; return flipped
        }
        candidates += (0..<19).map { [UInt8(0xed + $0)] + [UInt8](repeating: 0xff, count: 30) + [0xff] }
        for _ in 0..<200 { candidates.append(SystemRandom.bytes(32)) }
        for u in candidates {
            let openSSLRefuses = (try? key.sharedSecret(with: try X25519.PublicKey(rawRepresentation: u))) == nil
            let parseRefuses = (try? XWing.PublicKey(rawRepresentation: mlkemPart + u)) == nil
            #expect(
                openSSLRefuses == parseRefuses,
                "u = \(Hex.encode(u)): OpenSSL refuses \(openSSLRefuses), parsing refuses \(parseRefuses)")
        }
    }

    @Test func badLengths() throws {
        let key = XWing.PrivateKey.generate()
        let encoded = key.publicKey.rawRepresentation
        let (_, ciphertext) = key.publicKey.encapsulate()
        for length in 0..<(encoded.count + 8) where length != encoded.count {
            let candidate =
                length < encoded.count
                ? Array(encoded.prefix(length)) : encoded + [UInt8](repeating: 0, count: length - encoded.count)
            #expect(throws: CryptoError(.invalidLength, ""), "public key of \(length) bytes") {
                try XWing.PublicKey(rawRepresentation: candidate)
            }
        }
        for length in 0..<(ciphertext.count + 8) where length != ciphertext.count {
            let candidate =
                length < ciphertext.count
                ? Array(ciphertext.prefix(length))
                : ciphertext + [UInt8](repeating: 0, count: length - ciphertext.count)
            #expect(throws: CryptoError(.invalidLength, ""), "ciphertext of \(length) bytes") {
                try key.decapsulate(candidate)
            }
        }
        for length in [0, 31, 33, 64] {
            #expect(throws: CryptoError(.invalidLength, "")) {
                try XWing.PrivateKey(seed: [UInt8](repeating: 1, count: length))
            }
        }
    }
}
