import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// Files sealed to a contact (docs/PROTOCOL.md, "Contacts → Sealed files"): the known answer, checked by
/// Python's `cryptography` (AES-GCM) and `hmac`, and what must not open.
@Suite("Contact sealed files")
struct ContactSealedFileTests {
    let key = SecretBytes([UInt8](repeating: 0x44, count: 32))
    let recipient = WalletID(bytes: [UInt8](repeating: 0xb2, count: 32))!
    let nonce = [UInt8](repeating: 0x05, count: 12)

    @Test func theKnownAnswerMatchesAnIndependentOracle() throws {
        let sealed = try ContactSealedFile.seal(
            Array("transfer".utf8), fileKey: key, recipient: recipient, nonce: nonce)
        let oracle = try Run.program(
            Run.projectRoot + "/.venv/bin/python3",
            [
                "-c",
                """
                import hmac, hashlib
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM
                key, nonce, recipient = bytes([0x44] * 32), bytes([5] * 12), bytes([0xb2] * 32)
                key_id = hmac.new(key, b"secure-contact-file-id-v1\\x00" + nonce, hashlib.sha256).digest()[:16]
                header = b"SECSEAL1" + bytes([1]) + key_id + nonce
                print((header + AESGCM(key).encrypt(nonce, b"transfer", header + recipient)).hex())
                """,
            ])
        #expect(oracle.status == 0, "\(oracle.stderr)")
        #expect(Hex.encode(sealed.encoded) == oracle.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(ContactSealedFile.isFor(sealed.encoded, fileKey: key))
        #expect(
            try ContactSealedFile.open(sealed.encoded, fileKey: key, recipient: recipient) == Array("transfer".utf8))
    }

    @Test func onlyTheRecipientWithTheKeyOpensItAndNothingAlteredOpens() throws {
        let sealed = try ContactSealedFile.seal(Array(repeating: 7, count: 100), fileKey: key, recipient: recipient)
        let other = SecretBytes([UInt8](repeating: 0x45, count: 32))
        #expect(!ContactSealedFile.isFor(sealed.encoded, fileKey: other))
        let sender = WalletID(bytes: [UInt8](repeating: 0xa1, count: 32))!
        #expect(throws: FormatError.self) {
            try ContactSealedFile.open(sealed.encoded, fileKey: key, recipient: sender)
        }
        for index in [0, 8, 9, 30, sealed.encoded.count - 1] {
            var altered = sealed.encoded
            altered[index] ^= 1
            #expect(throws: (any Error).self, "byte \(index)") {
                try ContactSealedFile.open(altered, fileKey: key, recipient: recipient)
            }
        }
        for length in [0, 8, 36, 52] {
            #expect(throws: FormatError.self) {
                try ContactSealedFile.open(Array(sealed.encoded.prefix(length)), fileKey: key, recipient: recipient)
            }
        }
        let second = try ContactSealedFile.seal(Array(repeating: 7, count: 100), fileKey: key, recipient: recipient)
        #expect(Array(second.encoded[9..<25]) != Array(sealed.encoded[9..<25]), "two files share no key id")
    }
}
