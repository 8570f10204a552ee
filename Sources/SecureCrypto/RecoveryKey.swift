/// The recovery key of one key event: a P-256 key derived from the wallet's 32-byte recovery secret (the
/// recovery words) and the sequence number of the event that commits to it. It is the only software P-256
/// signing key in the wallet, and it signs one thing in its life: the recovery rotation that follows that
/// event. It lives in OpenSSL's memory for as long as the object does; the scalar is built in wiped memory.
///
/// Derivation (docs/PROTOCOL.md, "Recovery words"): for counter = 0, 1, 2, …,
/// `okm = HKDF-SHA256(IKM = secret, salt = empty, info = "secure-recovery-key-v1" ‖ 0x00 ‖ u64 BE sequence ‖
/// u8 counter, L = 32)`; the first okm that, read as a big-endian integer, lies in [1, n − 1] is the private
/// scalar d (a rejection happens with probability below 2⁻³²).
public final class RecoveryKey: MessageSigner {
    /// A rejection happens with probability about 2⁻³²; sixteen in a row never happen unless HKDF is broken.
    static let derivationCounterMax: UInt8 = 16
    /// The HKDF info label.
    static let label = "secure-recovery-key-v1"

    private let key: EVPPrivateKey
    /// The public half, whose SubjectPublicKeyInfo's SHA-256 is the event's recovery commitment.
    public let publicKey: P256.PublicKey

    /// Derives the recovery key for the event with this sequence number.
    public init(secret: SecretBytes, sequence: UInt64) throws {
        precondition(secret.count == 32, "a recovery secret is 32 bytes")
        var info = DomainLabel.bytes(Self.label)
        for shift in stride(from: 56, through: 0, by: -8) {
            info.append(UInt8(truncatingIfNeeded: sequence >> UInt64(shift)))
        }
        for counter in 0..<Self.derivationCounterMax {
            var scalar = try HKDFSHA256.deriveKey(
                inputKeyMaterial: secret, salt: [], info: info + [counter], outputByteCount: 32)
            // The array HKDF returns is copied into wiped memory and overwritten here.
            defer { for index in scalar.indices { scalar[index] = 0 } }
            let candidate = SecretBytes(scalar)
            // The comparison is not constant-time: it leaks only whether this candidate was rejected, a
            // one-in-four-billion event that reveals nothing about the scalar that is kept.
            guard scalar.contains(where: { $0 != 0 }), BigEndian.less(scalar, P256.order) else { continue }
            key = try EVPPrivateKey.p256(scalar: candidate)
            publicKey = try P256.PublicKey(spki: try key.subjectPublicKeyInfo())
            return
        }
        preconditionFailure("HKDF-SHA256 gave \(Self.derivationCounterMax) scalars out of range in a row")
    }

    /// Signs `payload` under `label`: low-s, and verified against the public key before it is returned.
    public func sign(_ payload: [UInt8], label: SignatureLabel) throws -> ECDSASignature {
        let digest = label.digest(of: payload)
        let signature = try ECDSASignature(der: try key.signDigest(digest)).lowS
        guard publicKey.isValidSignature(signature, digest: digest) else {
            throw CryptoError.openSSL("the recovery key's signature does not verify")
        }
        return signature
    }
}
