/// A domain-separation label for signatures. Every signed payload in the wallet is hashed as
/// SHA-256(label ‖ 0x00 ‖ payload), and no two uses share a label, so a signature made for one
/// purpose can never be replayed as another.
public struct SignatureLabel: Hashable, Sendable, CustomStringConvertible {
    /// The ASCII label, without the terminating zero byte.
    public let rawValue: String

    /// Makes a label. Labels are fixed strings of printable ASCII with no zero byte.
    public init(_ rawValue: String) {
        precondition(
            !rawValue.isEmpty && rawValue.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7e },
            "signature labels are non-empty printable ASCII")
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    /// Detached file signatures made by `secure sign`.
    public static let file = SignatureLabel("secure-file-v1")

    /// The digest a token signs for this label and payload: SHA-256(label ‖ 0x00 ‖ payload).
    public func digest(of payload: [UInt8]) -> [UInt8] {
        var hasher = SHA256.Hasher()
        hasher.update(DomainLabel.bytes(rawValue))
        hasher.update(payload)
        return hasher.finalize()
    }

    /// Verifies a signature by `key` over `payload` under this label; high-s signatures are refused.
    public func verify(_ signature: ECDSASignature, of payload: [UInt8], by key: P256.PublicKey) -> Bool {
        key.isValidSignature(signature, digest: digest(of: payload))
    }
}

/// The signer seam: SecureCore asks for a signature and a token produces it. Production code holds no
/// software private signing key but `RecoveryKey`, which signs one recovery rotation in its life; test
/// support provides one only for simulations too fast for a token.
public protocol MessageSigner: AnyObject {
    /// The public key whose signatures this signer makes.
    var publicKey: P256.PublicKey { get }

    /// Signs `payload` under `label`. The result is low-s and has been verified against `publicKey`.
    func sign(_ payload: [UInt8], label: SignatureLabel) throws -> ECDSASignature
}
