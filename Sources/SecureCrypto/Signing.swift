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
    /// The clearing's signed tree heads of cosigned checkpoints (docs/CLEARING.md §2.7), by the clearing key.
    public static let clearingHead = SignatureLabel("secure-clearing-head-v1")
    /// The clearing's settlements, which end a listing (docs/CLEARING.md §2.9), by the clearing key.
    public static let clearingSettlement = SignatureLabel("secure-clearing-settlement-v1")

    /// The digest a token signs for this label and payload: SHA-256(label ‖ 0x00 ‖ payload). Inside
    /// `SignatureDomain.rehearsal` it is SHA-256("secure-rehearsal-v1" ‖ 0x00 ‖ label ‖ 0x00 ‖ payload), so a
    /// rehearsal's signatures verify nowhere else, and no real signature verifies inside a rehearsal.
    public func digest(of payload: [UInt8]) -> [UInt8] {
        var hasher = SHA256.Hasher()
        if SignatureDomain.isRehearsal { hasher.update(DomainLabel.bytes(SignatureDomain.rehearsalLabel)) }
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
/// software private signing key but `RecoveryKey`, which signs one recovery rotation in its life, and
/// `RehearsalKey`, which signs only inside a rehearsal; test support provides one only for simulations too
/// fast for a token.
public protocol MessageSigner: AnyObject {
    /// The public key whose signatures this signer makes.
    var publicKey: P256.PublicKey { get }

    /// Signs `payload` under `label`. The result is low-s and has been verified against `publicKey`.
    func sign(_ payload: [UInt8], label: SignatureLabel) throws -> ECDSASignature
}

/// Where signatures are made and checked. Outside a rehearsal (always, for every real command) the digest is
/// the label's alone. `secure rehearse` runs its whole engine inside `SignatureDomain.rehearsal { … }`: every
/// signature made and every one checked there carries the `secure-rehearsal-v1` prefix, a label that no real
/// statement's verification uses (docs/PROTOCOL.md, "Signature labels"), so nothing signed in a rehearsal is
/// ever accepted by a real wallet.
///
/// The flag is a task-local. A rehearsal is one synchronous loop on one thread, and outside any task a
/// task-local binds to the current thread: work moved to another thread or queue does not see the domain and
/// signs or verifies as real code, which fails closed (a rehearsal key refuses to sign there, and a rehearsal
/// signature does not verify there).
public enum SignatureDomain {
    /// The prefix label of every rehearsal digest.
    public static let rehearsalLabel = "secure-rehearsal-v1"
    /// The label of the clearing key's countersignature on a clearing delegation (key-event kind 3): its proof
    /// that the clearing key the issuer delegates to can sign (docs/PROTOCOL.md, "Key events").
    public static let clearingDelegationLabel = "secure-clearing-delegation-v1"

    private static let rehearsalFlag = TaskLocal<Bool>(wrappedValue: false)

    /// Whether the current task (or thread, outside tasks) is inside a rehearsal.
    public static var isRehearsal: Bool { rehearsalFlag.get() }

    /// Runs `body` inside the rehearsal domain.
    public static func rehearsal<Result>(_ body: () throws -> Result) rethrows -> Result {
        try rehearsalFlag.withValue(true, operation: body)
    }
}

/// A P-256 signing key made fresh in process memory for one rehearsal (`secure rehearse`), never stored and
/// in no real wallet's key-event log. After `RecoveryKey` it is the second software signing key in
/// production code, and it cannot sign for a real wallet: it signs only inside `SignatureDomain.rehearsal`
/// (a precondition), where every digest carries the rehearsal label (docs/THREAT-MODEL.md).
public final class RehearsalKey {
    private let key: EVPPrivateKey
    /// The public half.
    public let publicKey: P256.PublicKey

    /// A fresh random key: a scalar drawn in wiped memory, redrawn when out of [1, n − 1].
    public init() throws {
        while true {
            let candidate = SecretBytes(randomCount: P256.scalarByteCount)
            let inRange = candidate.withUnsafeBytes { bytes in
                // Compared in place, so no copy of the scalar is left in unwiped memory.
                let first = zip(bytes, P256.order).first { $0 != $1 }
                return bytes.contains { $0 != 0 } && first.map { $0 < $1 } == true
            }
            guard inRange else { continue }
            key = try EVPPrivateKey.p256(scalar: candidate)
            publicKey = try P256.PublicKey(spki: try key.subjectPublicKeyInfo())
            return
        }
    }

    /// A low-s signature over a 32-byte digest, verified before it is returned. Only inside a rehearsal.
    public func sign(digest: [UInt8]) throws -> ECDSASignature {
        precondition(SignatureDomain.isRehearsal, "a rehearsal key signs only inside SignatureDomain.rehearsal")
        let signature = try ECDSASignature(der: try key.signDigest(digest)).lowS
        guard publicKey.isValidSignature(signature, digest: digest) else {
            throw CryptoError.openSSL("a rehearsal key's signature does not verify")
        }
        return signature
    }
}
