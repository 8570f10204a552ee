import Foundation
import SecureCrypto

/// An RSA decryption key pair on a token, for tokens without ECDH that decrypt RSA-OAEP (a TPM through
/// tpm2-pkcs11). The wallet wraps its database key to the public half (SecureStore's recipient type 2).
public struct TokenRSAKey: Sendable {
    /// CKA_ID, random per key.
    public let id: [UInt8]
    /// CKA_LABEL.
    public let label: String
    /// The public key, read from the token's CKA_MODULUS and CKA_PUBLIC_EXPONENT.
    public let publicKey: RSAPublicKey
    /// A URI that names this key on its token.
    public let uri: PKCS11URI
}

extension Token {
    /// Whether the token derives P-256 ECDH secrets (CKM_ECDH1_DERIVE).
    public var supportsECDH: Bool { supports(mechanism: CK.mechanismECDH1Derive) }
    /// Whether the token decrypts RSA-OAEP (CKM_RSA_PKCS_OAEP).
    public var supportsRSAOAEP: Bool { supports(mechanism: CK.mechanismRSAOAEP) }
}

extension TokenSession {
    /// The RSA modulus size of the decryption keys made here: NIST's 112-bit level, and what TPMs offer.
    public static let rsaModulusBitCount: UInt = 2048

    /// Generates a 2048-bit RSA key pair on the token for RSA-OAEP decryption: private, sensitive, never
    /// extractable. As with P-256 keys, the attributes are read back and a weak key is destroyed.
    public func generateRSADecryptionKey(label: String) throws -> TokenRSAKey {
        let id = SystemRandom.bytes(16)
        let labelBytes = Array(label.utf8)
        let publicTemplate: [AttributeValue] = [
            .number(Attribute.class, CK.classPublicKey), .number(Attribute.keyType, CK.keyTypeRSA),
            .bool(Attribute.token, true), .bool(Attribute.private, false),
            .number(Attribute.modulusBits, Self.rsaModulusBitCount),
            .bytes(Attribute.publicExponent, [0x01, 0x00, 0x01]), .bool(Attribute.encrypt, true),
            .bytes(Attribute.id, id), .bytes(Attribute.label, labelBytes),
        ]
        let privateTemplate: [AttributeValue] = [
            .number(Attribute.class, CK.classPrivateKey), .number(Attribute.keyType, CK.keyTypeRSA),
            .bool(Attribute.token, true), .bool(Attribute.private, true), .bool(Attribute.sensitive, true),
            .bool(Attribute.extractable, false), .bool(Attribute.decrypt, true),
            .bytes(Attribute.id, id), .bytes(Attribute.label, labelBytes),
        ]
        return try withSessionForRSA { session in
            let (publicHandle, privateHandle) = try session.generateRSAKeyPair(
                publicTemplate: publicTemplate,
                privateTemplate: privateTemplate)
            do {
                try Self.refuseWeak(
                    try Self.readAttributes(session, privateHandle), usage: .decrypt, generatedHere: true,
                    policy: policy, what: "the token made an RSA key that was destroyed because it")
                return TokenRSAKey(
                    id: id, label: label, publicKey: try Self.readRSAPublicKey(session, publicHandle),
                    uri: keyURI(id: id, label: label))
            } catch {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
                throw error
            }
        }
    }

    /// Every RSA key pair on the token whose private half is there, with its public key.
    public func rsaKeys() throws -> [TokenRSAKey] {
        try withSessionForRSA { session in
            try Self.privateKeys(session, keyType: CK.keyTypeRSA) { id, label in
                guard
                    let publicHandle = try session.findObjects([
                        .number(Attribute.class, CK.classPublicKey),
                        .number(Attribute.keyType, CK.keyTypeRSA),
                        .bytes(Attribute.id, id),
                    ]).first,
                    let publicKey = try? Self.readRSAPublicKey(session, publicHandle)
                else { return nil }
                return TokenRSAKey(id: id, label: label, publicKey: publicKey, uri: keyURI(id: id, label: label))
            }
        }
    }

    /// The RSA key with a CKA_ID.
    public func rsaKey(id: [UInt8]) throws -> TokenRSAKey {
        guard let key = try rsaKeys().first(where: { $0.id == id }) else {
            throw TokenError(.keyNotFound, "no RSA key with id \(Hex.encode(id)) on \"\(token.label)\"")
        }
        return key
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) decryption on the token.
    public func decryptOAEPSHA256(key: TokenRSAKey, ciphertext: [UInt8]) throws -> SecretBytes {
        try withSessionForRSA { session in
            let handles = try session.findObjects([
                .number(Attribute.class, CK.classPrivateKey),
                .number(Attribute.keyType, CK.keyTypeRSA), .bytes(Attribute.id, key.id),
            ])
            guard handles.count == 1 else {
                throw TokenError(.keyNotFound, "the RSA key with id \(Hex.encode(key.id)) is not on \"\(token.label)\"")
            }
            var plaintext = try session.decryptRSAOAEP(
                handles[0], ciphertext: ciphertext,
                outputByteCountMax: key.publicKey.ciphertextByteCount)
            defer { plaintext.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
            return SecretBytes(plaintext)
        }
    }

    static func readRSAPublicKey(_ session: SessionHandle, _ handle: ObjectHandle) throws -> RSAPublicKey {
        guard let modulus = try session.attribute(handle, Attribute.modulus),
            let exponent = try session.attribute(handle, Attribute.publicExponent)
        else {
            throw TokenError(.keyRefused, "the token did not return the RSA key's CKA_MODULUS and CKA_PUBLIC_EXPONENT")
        }
        do {
            return try RSAPublicKey(modulus: modulus, publicExponent: exponent)
        } catch {
            throw TokenError(.keyRefused, "the token's RSA public key is not usable: \(error)")
        }
    }
}
