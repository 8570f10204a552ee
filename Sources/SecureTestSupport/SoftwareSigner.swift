internal import CLibCrypto
import SecureCore
import SecureCrypto

/// TEST SUPPORT ONLY. A P-256 signer whose private key lives in process memory, for simulations and
/// fixtures too large or too fast for a token (signing a million-entry fixture on SoftHSM takes an hour).
/// Production code never links this module: the wallet's keys live on PKCS#11 tokens.
public final class SoftwareSigner: MessageSigner {
    /// The EVP_PKEY holding the key pair; freed with the signer.
    private let key: OpaquePointer
    /// The public half.
    public let publicKey: P256.PublicKey

    /// Generates a fresh random key pair with OpenSSL.
    public init() throws {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else {
            throw SoftwareSigner.failure("EVP_PKEY_CTX_new_id")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1
        else {
            throw SoftwareSigner.failure("EVP_PKEY_keygen_init")
        }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen(context, &generated) == 1, let generated else {
            throw SoftwareSigner.failure("EVP_PKEY_keygen")
        }
        key = generated
        let length = i2d_PUBKEY(generated, nil)
        guard length > 0 else { throw SoftwareSigner.failure("i2d_PUBKEY") }
        var spki = [UInt8](repeating: 0, count: Int(length))
        let written = spki.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(generated, &cursor)
        }
        guard written == length else { throw SoftwareSigner.failure("i2d_PUBKEY") }
        publicKey = try P256.PublicKey(spki: spki)
    }

    /// A fixed key pair from a 32-byte private scalar (1 ≤ d < n), so that fixtures and fuzz corpora that name
    /// the key stay valid from one process to the next. OpenSSL derives the public point.
    public init(privateKey scalar: [UInt8]) throws {
        precondition(scalar.count == 32, "a P-256 private scalar is 32 bytes")
        // SEC 1 ECPrivateKey: SEQUENCE { version 1, OCTET STRING d, [0] namedCurve prime256v1 }.
        let der: [UInt8] =
            [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + scalar
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &cursor, buffer.count)
        }
        guard let parsed else { throw SoftwareSigner.failure("d2i_PrivateKey") }
        key = parsed
        let length = i2d_PUBKEY(parsed, nil)
        guard length > 0 else { throw SoftwareSigner.failure("i2d_PUBKEY") }
        var spki = [UInt8](repeating: 0, count: Int(length))
        let written = spki.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(parsed, &cursor)
        }
        guard written == length else { throw SoftwareSigner.failure("i2d_PUBKEY") }
        publicKey = try P256.PublicKey(spki: spki)
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs SHA-256(label ‖ 0x00 ‖ payload) and returns the low-s form, checked against the public key.
    public func sign(_ payload: [UInt8], label: SignatureLabel) throws -> ECDSASignature {
        try sign(digest: label.digest(of: payload))
    }

    /// Signs a 32-byte SHA-256 digest, as a token's CKM_ECDSA does; low-s, checked against the public key.
    public func sign(digest: [UInt8]) throws -> ECDSASignature {
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw SoftwareSigner.failure("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        var length = 0
        guard EVP_PKEY_sign_init(context) == 1, EVP_PKEY_sign(context, nil, &length, digest, digest.count) == 1 else {
            throw SoftwareSigner.failure("EVP_PKEY_sign_init")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context, &der, &length, digest, digest.count) == 1 else {
            throw SoftwareSigner.failure("EVP_PKEY_sign")
        }
        let signature = try ECDSASignature(der: Array(der.prefix(length))).lowS
        guard publicKey.isValidSignature(signature, digest: digest) else {
            throw CryptoError(.invalidSignature, "the software signer made a signature that does not verify")
        }
        return signature
    }

    private static func failure(_ call: String) -> CryptoError {
        ERR_clear_error()
        return CryptoError(.openSSL, "\(call) failed in the test-only software signer")
    }
}
