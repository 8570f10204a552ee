import SecureCrypto
import Testing

/// The ML-KEM known-answer files shipped in cryptography-vectors 50.0.2: every record, every field.
@Suite("ML-KEM known-answer files")
struct MLKEMKATTests {
    @Test("kat_MLKEM_512.rsp") func mlkem512() throws { try run(MLKEM512.self, file: "kat_MLKEM_512.rsp") }
    @Test("kat_MLKEM_768.rsp") func mlkem768() throws { try run(MLKEM768.self, file: "kat_MLKEM_768.rsp") }
    @Test("kat_MLKEM_1024.rsp") func mlkem1024() throws { try run(MLKEM1024.self, file: "kat_MLKEM_1024.rsp") }

    func run<P>(_ kem: MLKEM<P>.Type, file: String) throws {
        let records = RSPRecord.parse(try Oracles.vectorFile("asymmetric/MLKEM/" + file))
        #expect(records.count == 1000, "\(file) should hold 1000 records")
        var failures = 0
        for record in records {
            let name = "\(file) count = \(record.count)"
            let d = try record.bytes("d", file: file), z = try record.bytes("z", file: file)
            let pk = try record.bytes("pk", file: file), sk = try record.bytes("sk", file: file)
            let msg = try record.bytes("msg", file: file), ct = try record.bytes("ct", file: file)
            let ss = try record.bytes("ss", file: file)
            let rejectedCiphertext = try record.bytes("ct_n", file: file),
                rejectedSecret = try record.bytes("ss_n", file: file)

            let key = try MLKEM<P>.PrivateKey._generate(d: d, z: z)
            var ok = check(key.publicKey.rawRepresentation == pk, "\(name): pk")
            ok = check(key.decapsulationKey.copyBytes() == sk, "\(name): sk") && ok
            let publicKey = try MLKEM<P>.PublicKey(rawRepresentation: pk)
            let (secret, ciphertext) = try publicKey._encapsulate(message: msg)
            ok = check(ciphertext == ct, "\(name): ct") && ok
            ok = check(secret.copyBytes() == ss, "\(name): ss from encapsulation") && ok
            let parsed = try MLKEM<P>.PrivateKey(decapsulationKey: sk)
            let decapsulated = try parsed.decapsulate(ct).copyBytes()
            ok = check(decapsulated == ss, "\(name): ss from decapsulation") && ok
            let rejected = try key.decapsulate(rejectedCiphertext).copyBytes()
            ok = check(rejected == rejectedSecret, "\(name): implicit rejection ss_n") && ok
            if !ok { failures += 1 }
            // Stop flooding the log after a few broken records; the first failures name them.
            if failures >= 5 { break }
        }
        #expect(failures == 0, "\(file): \(failures) record(s) failed, named above")
    }

    private func check(_ condition: Bool, _ what: String) -> Bool {
        #expect(condition, Comment(rawValue: what))
        return condition
    }
}
