internal import CLibCrypto

/// NIST P-256 public keys and ECDSA verification. Private P-256 signing keys live on tokens; the one
/// exception is `RecoveryKey`, derived from recovery words for a single signature.
public enum P256 {
    /// Bytes in one field element or scalar.
    public static let scalarByteCount = 32
    /// Bytes in an uncompressed point: 0x04 ‖ x ‖ y.
    public static let uncompressedPointByteCount = 65

    /// The group order n, big-endian.
    static let order: [UInt8] = hexBytes("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
    /// ⌊n / 2⌋, big-endian: the largest s a low-s signature may carry.
    static let halfOrder: [UInt8] = hexBytes("7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a8")

    /// The DER prefix of a P-256 SubjectPublicKeyInfo up to the 65 point bytes: SEQUENCE { SEQUENCE {
    /// id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) }.
    static let spkiPrefix: [UInt8] = hexBytes("3059301306072a8648ce3d020106082a8648ce3d030107034200")

    /// A P-256 public key, checked to be a valid point on the curve.
    public struct PublicKey: Hashable, Sendable {
        /// The uncompressed point 0x04 ‖ x ‖ y.
        public let x963: [UInt8]
        /// The parsed OpenSSL key, kept so that verifying does not parse and check the point again.
        private let backing: EVPPublicKey

        public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.x963 == rhs.x963 }
        public func hash(into hasher: inout Hasher) { hasher.combine(x963) }

        /// Parses an uncompressed point and checks that it is on the curve.
        public init(x963 point: [UInt8]) throws {
            guard point.count == P256.uncompressedPointByteCount, point[0] == 0x04 else {
                throw CryptoError(
                    .invalidKey,
                    "a P-256 public key must be a 65-byte uncompressed point starting 0x04, got \(point.count) bytes")
            }
            backing = try P256KeyCache.shared.key(x963: point)
            x963 = point
        }

        /// Parses a DER SubjectPublicKeyInfo; only P-256 keys are accepted.
        public init(spki der: [UInt8]) throws {
            guard der.count == P256.spkiPrefix.count + P256.uncompressedPointByteCount,
                Array(der.prefix(P256.spkiPrefix.count)) == P256.spkiPrefix
            else {
                throw CryptoError(.invalidKey, "not a P-256 SubjectPublicKeyInfo with an uncompressed point")
            }
            try self.init(x963: Array(der.suffix(P256.uncompressedPointByteCount)))
        }

        /// Parses a PEM "PUBLIC KEY" block.
        public init(pem: String) throws {
            try self.init(spki: try PEM.decode(pem, label: "PUBLIC KEY"))
        }

        /// The DER SubjectPublicKeyInfo.
        public var spki: [UInt8] { P256.spkiPrefix + x963 }

        /// The SubjectPublicKeyInfo as PEM.
        public var pem: String { PEM.encode(spki, label: "PUBLIC KEY") }

        /// SHA-256 of the SubjectPublicKeyInfo: the key's fingerprint.
        public var fingerprint: [UInt8] { SHA256.hash(spki) }

        /// Verifies a DER ECDSA signature over a 32-byte digest. High-s signatures are refused, so a
        /// signature cannot be altered without changing its meaning.
        public func isValidSignature(_ signature: ECDSASignature, digest: [UInt8]) -> Bool {
            guard digest.count == SHA256.byteCount, !signature.isHighS else { return false }
            let der = signature.der
            return P256VerifiedSignatures.shared.isValid(key: x963, digest: digest, der: der) {
                backing.verify(der: der, digest: digest)
            }
        }

        /// A verifier for many signatures by this key on one thread: it sets up OpenSSL's verify
        /// operation once, where `isValidSignature` sets it up per call (EVP_PKEY_CTX_new and
        /// EVP_PKEY_verify_init fetch the algorithm again each time, about a tenth of a P-256 verify).
        public func verifier() -> Verifier? { Verifier(backing) }
    }

    /// Verifies signatures by one key, reusing one verify context. Not thread-safe: one per thread.
    public final class Verifier {
        private let context: OpaquePointer
        private let key: EVPPublicKey // kept alive as long as the context that uses it

        fileprivate init?(_ key: EVPPublicKey) {
            guard let context = EVP_PKEY_CTX_new(key.pointer, nil) else { return nil }
            guard EVP_PKEY_verify_init(context) == 1 else {
                EVP_PKEY_CTX_free(context)
                CryptoError.clearOpenSSLQueue()
                return nil
            }
            self.context = context
            self.key = key
        }

        deinit { EVP_PKEY_CTX_free(context) }

        /// The same check as `PublicKey.isValidSignature`: a 32-byte digest, low s, and a valid signature.
        public func isValidSignature(_ signature: ECDSASignature, digest: [UInt8]) -> Bool {
            guard digest.count == SHA256.byteCount, !signature.isHighS else { return false }
            let der = signature.der
            let result = EVP_PKEY_verify(context, der, der.count, digest, digest.count)
            CryptoError.clearOpenSSLQueue()
            return result == 1
        }
    }
}

/// An ECDSA P-256 signature (r, s), held as two 32-byte big-endian integers.
public struct ECDSASignature: Hashable, Sendable {
    /// r, big-endian, 32 bytes.
    public let r: [UInt8]
    /// s, big-endian, 32 bytes.
    public let s: [UInt8]

    /// Makes a signature from the raw r ‖ s form that PKCS#11 tokens return (2 · 32 bytes).
    public init(raw: [UInt8]) throws {
        guard raw.count == 2 * P256.scalarByteCount else {
            throw CryptoError(.invalidSignature, "a raw P-256 signature is 64 bytes (r ‖ s), got \(raw.count)")
        }
        r = Array(raw.prefix(32))
        s = Array(raw.suffix(32))
        try checkRange()
    }

    /// Parses a strict DER Ecdsa-Sig-Value: SEQUENCE { INTEGER r, INTEGER s }, minimally encoded.
    public init(der: [UInt8]) throws {
        var reader = DERReader(der)
        guard let sequence = reader.read(tag: 0x30), reader.isAtEnd else {
            throw CryptoError(.invalidSignature, "an ECDSA signature must be one DER SEQUENCE")
        }
        var inner = DERReader(sequence)
        guard let rBytes = inner.read(tag: 0x02), let sBytes = inner.read(tag: 0x02), inner.isAtEnd,
            let r = DERReader.unsignedScalar(rBytes), let s = DERReader.unsignedScalar(sBytes)
        else {
            throw CryptoError(.invalidSignature, "an ECDSA signature must hold two minimal DER INTEGERs r and s")
        }
        self.r = r
        self.s = s
        try checkRange()
    }

    private func checkRange() throws {
        let zero = [UInt8](repeating: 0, count: 32)
        guard r != zero, s != zero, BigEndian.less(r, P256.order), BigEndian.less(s, P256.order) else {
            throw CryptoError(.invalidSignature, "ECDSA r and s must lie in [1, n−1]")
        }
    }

    /// The raw r ‖ s form.
    public var raw: [UInt8] { r + s }

    /// The DER encoding.
    public var der: [UInt8] {
        let body = DERWriter.integer(r) + DERWriter.integer(s)
        return DERWriter.tagged(0x30, body)
    }

    /// Whether s lies in the upper half of the group order.
    public var isHighS: Bool { BigEndian.less(P256.halfOrder, s) }

    /// The same signature with s replaced by n − s when s > n/2. Both verify; only the low one is accepted.
    public var lowS: ECDSASignature {
        guard isHighS else { return self }
        return ECDSASignature(unchecked: r, s: BigEndian.subtract(P256.order, s))
    }

    private init(unchecked r: [UInt8], s: [UInt8]) {
        self.r = r
        self.s = s
    }
}

/// An OpenSSL EVP_PKEY holding a public key, freed with its owner.
final class EVPPublicKey: @unchecked Sendable {
    // EVP_PKEY is reference-counted and safe to share for verification across threads.
    let pointer: OpaquePointer

    init(spki: [UInt8]) throws {
        var cursor: UnsafePointer<UInt8>? = nil
        let parsed: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key = parsed else { throw CryptoError.openSSL("not a valid public key", code: .invalidKey) }
        pointer = key
        // Decoding already refuses points off the curve; the explicit check also refuses the point at infinity.
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check(context) == 1 else {
            throw CryptoError.openSSL("the public key is not a valid point", code: .invalidKey)
        }
    }

    deinit { EVP_PKEY_free(pointer) }

    func verify(der signature: [UInt8], digest: [UInt8]) -> Bool {
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_verify_init(context) == 1 else {
            CryptoError.clearOpenSSLQueue()
            return false
        }
        let result = EVP_PKEY_verify(context, signature, signature.count, digest, digest.count)
        CryptoError.clearOpenSSLQueue()
        return result == 1
    }
}

/// Big-endian unsigned integers of equal length, as byte arrays.
enum BigEndian {
    /// a < b for equal-length big-endian numbers. Public values only: it returns early.
    static func less(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        precondition(a.count == b.count)
        for index in a.indices where a[index] != b[index] { return a[index] < b[index] }
        return false
    }

    /// a − b for equal-length big-endian numbers with a ≥ b.
    static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        precondition(a.count == b.count)
        var result = [UInt8](repeating: 0, count: a.count)
        var borrow = 0
        for index in a.indices.reversed() {
            var difference = Int(a[index]) - Int(b[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        precondition(borrow == 0, "subtract underflow")
        return result
    }
}

func hexBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    precondition(digits.count % 2 == 0)
    return stride(from: 0, to: digits.count, by: 2).map { index in
        UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
    }
}
