import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureToken

/// Against real SoftHSM2 tokens made fresh for the run.
@Suite("Token signer on SoftHSM", .serialized)
struct TokenSignerTests {
    @Test func generatedKeysHaveTheRequiredAttributes() throws {
        let fresh = try TestTokens.fresh("attrs")
        let session = try fresh.session()
        defer { session.close() }
        let signing = try session.generateKey(label: "signing", usage: .sign)
        let attributes = try session.attributes(of: signing.uri)
        #expect(attributes.sensitive == true)
        #expect(attributes.extractable == false)
        #expect(attributes.neverExtractable == true)
        #expect(attributes.alwaysSensitive == true)
        #expect(attributes.local == true)
        #expect(attributes.alwaysAuthenticate == true)
        #expect(attributes.sign == true)
        #expect(attributes.derive == false && attributes.decrypt == false && attributes.unwrap == false)
        #expect(attributes.isPrivate == true && attributes.token == true)
        #expect(signing.id.count == 16)

        let agreement = try session.generateKey(label: "agreement", usage: .derive)
        let agreementAttributes = try session.attributes(of: agreement.uri)
        #expect(agreementAttributes.derive == true && agreementAttributes.sign == false)
        #expect(agreement.id != signing.id)
    }

    @Test func signatureVerifiesWithOpenSSLAndIsLowS() throws {
        let fresh = try TestTokens.fresh("sign")
        let session = try fresh.session()
        defer { session.close() }
        let key = try session.generateKey(label: "k", usage: .sign)
        let signer = try TokenSigner(session: session, keyURI: key.uri)
        for index in 0..<20 {
            let payload = Array("statement \(index)".utf8)
            let signature = try signer.sign(payload, label: .file)
            #expect(!signature.isHighS)
            #expect(SignatureLabel.file.verify(signature, of: payload, by: key.publicKey))
            #expect(!SignatureLabel.file.verify(signature, of: payload + [0], by: key.publicKey))
            // The same bytes under another label must not verify: labels separate purposes.
            #expect(!SignatureLabel("secure-other-v1").verify(signature, of: payload, by: key.publicKey))
        }
    }

    @Test func highSIsRefused() throws {
        let fresh = try TestTokens.fresh("highs")
        let session = try fresh.session()
        defer { session.close() }
        let key = try session.generateKey(label: "k", usage: .sign)
        let digest = SignatureLabel.file.digest(of: [1, 2, 3])
        let low = try session.sign(digest: digest, key: key)
        // n − s: the mirror signature that plain ECDSA would also accept.
        let order = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
        var high = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(order[index]) - Int(low.s[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            high[index] = UInt8(difference)
        }
        let mirrored = try ECDSASignature(raw: low.r + high)
        #expect(mirrored.isHighS)
        #expect(key.publicKey.isValidSignature(low, digest: digest))
        #expect(!key.publicKey.isValidSignature(mirrored, digest: digest))
        #expect(mirrored.lowS == low)
    }

    @Test func tokenRefusesSigningWithoutThePerSignatureLogin() throws {
        let fresh = try TestTokens.fresh("noctx")
        let session = try fresh.session()
        defer { session.close() }
        let key = try session.generateKey(label: "k", usage: .sign)
        do {
            try session.signWithoutContextLoginForTesting(key: key, digest: [UInt8](repeating: 7, count: 32))
            Issue.record("the token signed without the per-signature login")
        } catch let error as TokenError {
            #expect(error.returnValueName == "CKR_USER_NOT_LOGGED_IN")
        }
        // The session recovers for a proper signature afterwards.
        _ = try session.sign(digest: [UInt8](repeating: 7, count: 32), key: key)
    }

    @Test func wrongPINIsReportedAndNeverSentAgain() throws {
        let fresh = try TestTokens.fresh("wrongpin")
        let wrong = try PIN("00000000")
        do {
            _ = try TokenSession(token: fresh.token, pin: wrong)
            Issue.record("a wrong PIN logged in")
        } catch let error as TokenError {
            #expect(error.code == .pinIncorrect)
            #expect(error.returnValueName == "CKR_PIN_INCORRECT")
        }
        // The PIN was wiped at the first CKR_PIN_INCORRECT, so no retry can send it.
        #expect(wrong.isDiscarded)
        #expect(throws: TokenError(.pinUnavailable, "")) { try TokenSession(token: fresh.token, pin: wrong) }
        // The right PIN still works: SoftHSM only ever reports "count low", never locks.
        let session = try fresh.session()
        session.close()
    }

    @Test func twoTokensAtOnce() throws {
        let first = try TestTokens.fresh("two-a"), second = try TestTokens.fresh("two-b")
        let sessionA = try first.session(), sessionB = try second.session()
        defer { sessionA.close(); sessionB.close() }
        let keyA = try sessionA.generateKey(label: "same-label", usage: .sign)
        let keyB = try sessionB.generateKey(label: "same-label", usage: .sign)
        #expect(keyA.publicKey != keyB.publicKey)
        for index in 0..<10 {
            let digest = SignatureLabel.file.digest(of: [UInt8(index)])
            let signatureA = try sessionA.sign(digest: digest, key: keyA)
            let signatureB = try sessionB.sign(digest: digest, key: keyB)
            #expect(keyA.publicKey.isValidSignature(signatureA, digest: digest))
            #expect(!keyA.publicKey.isValidSignature(signatureB, digest: digest))
        }
        // Each key is found only on its own token.
        #expect(try first.token.publicKey(keyA.uri).publicKey == keyA.publicKey)
        var foreign = first.uri
        foreign.id = keyB.id
        #expect(throws: TokenError(.keyNotFound, "")) { try first.token.publicKey(foreign) }
    }

    @Test func missingModuleTokenAndKey() throws {
        #expect(throws: TokenError(.moduleNotFound, "")) {
            try TokenLibrary.shared.token(PKCS11URI("pkcs11:token=a?module-name=no-such-module"))
        }
        #expect(throws: TokenError(.moduleNotFound, "")) {
            try TokenLibrary.shared.token(PKCS11URI("pkcs11:token=a?module-path=/nonexistent/lib.so"))
        }
        #expect(throws: TokenError(.tokenNotFound, "")) {
            try TokenLibrary.shared.token(PKCS11URI("pkcs11:token=no-such-token?module-name=softhsm2"))
        }
        let fresh = try TestTokens.fresh("missing")
        let session = try fresh.session()
        defer { session.close() }
        var uri = fresh.uri
        uri.object = "no-such-key"
        #expect(throws: TokenError(.keyNotFound, "")) { try session.key(uri) }
        #expect(throws: TokenError(.keyNotFound, "")) { try fresh.token.publicKey(uri) }
    }

    @Test func lostSessionGivesACleanErrorAndRecovers() throws {
        let fresh = try TestTokens.fresh("lost")
        let session = try fresh.session()
        defer { session.close() }
        let key = try session.generateKey(label: "k", usage: .sign)
        let digest = [UInt8](repeating: 1, count: 32)
        _ = try session.sign(digest: digest, key: key)
        try fresh.token.dropAllSessionsForTesting()
        do {
            _ = try session.sign(digest: digest, key: key)
            Issue.record("signed on a session the token had closed")
        } catch let error as TokenError {
            #expect(error.code == .tokenRemoved)
            #expect(error.returnValueName == "CKR_SESSION_HANDLE_INVALID")
        }
        // The next call opens a new session, logs in again and finds the key again by CKA_ID.
        #expect(key.publicKey.isValidSignature(try session.sign(digest: digest, key: key), digest: digest))
    }

    @Test func noSessionLeaksOverThousandsOfSignatures() throws {
        let fresh = try TestTokens.fresh("leak")
        let setup = try fresh.session()
        let key = try setup.generateKey(label: "k", usage: .sign)
        setup.close()
        // SoftHSM does not report ulSessionCount, so the module is asked about every handle instead, and
        // only sessions on this token's slot count: other tests use other tokens of the same module.
        let before = fresh.token.probedOpenSessionCountForTesting()
        #expect(before == 0, "no session of this token is open yet")
        let digest = [UInt8](repeating: 9, count: 32)
        // The positive control: sessions left open (leaked, for as long as they are held) are seen, one by one.
        var held: [TokenSession] = []
        for count in 1...3 {
            let session = try fresh.session()
            _ = try session.sign(digest: digest, key: key)
            held.append(session)
            let counted = fresh.token.probedOpenSessionCountForTesting()
            #expect(counted == before + count, "\(count) held sessions are counted, not \(counted)")
        }
        for session in held { session.close() }
        held = []
        #expect(fresh.token.probedOpenSessionCountForTesting() == before, "closed sessions are gone")
        for _ in 0..<10 {
            let session = try fresh.session()
            for _ in 0..<200 { _ = try session.sign(digest: digest, key: key) }
            session.close()
        }
        // Public reads open and close their own sessions too.
        for _ in 0..<100 { _ = try fresh.token.publicKeys() }
        let after = fresh.token.probedOpenSessionCountForTesting()
        #expect(after == before, "open sessions went from \(before) to \(after)")
    }

    @Test func ecdhOnTheTokenMatchesBothSides() throws {
        let first = try TestTokens.fresh("ecdh-a"), second = try TestTokens.fresh("ecdh-b")
        let sessionA = try first.session(), sessionB = try second.session()
        defer { sessionA.close(); sessionB.close() }
        let keyA = try sessionA.generateKey(label: "ka", usage: .derive)
        let keyB = try sessionB.generateKey(label: "kb", usage: .derive)
        let secretAB = try sessionA.deriveSharedSecret(key: keyA, peer: keyB.publicKey)
        let secretBA = try sessionB.deriveSharedSecret(key: keyB, peer: keyA.publicKey)
        #expect(secretAB.count == 32)
        #expect(secretAB == secretBA)
    }
}
