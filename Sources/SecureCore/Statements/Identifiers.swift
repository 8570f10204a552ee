import SecureCrypto

/// An identifier or digest of a length its format fixes. The length is checked once, when the value is
/// made from outside bytes (`init?(bytes:)` returns nil on any other length, so decoders never trap);
/// after that the type carries the guarantee and no API re-checks it.
///
/// Conformers store the bytes and implement `init(validated:)`; the one length check lives in
/// `ValidatedBytes`, which only `init?(bytes:)` makes outside the package, so no path skips it.
public protocol FixedByteValue: Hashable, Sendable, CustomStringConvertible {
    /// The number of bytes every value of the type has.
    static var byteCount: Int { get }
    /// The value's bytes, exactly `byteCount` of them.
    var bytes: [UInt8] { get }
    /// The value with bytes whose length has been checked against `byteCount`.
    init(validated: ValidatedBytes<Self>)
}

/// Bytes checked to be exactly `Value.byteCount` long. Outside the package only `FixedByteValue.init?(bytes:)`
/// makes them; inside it, a wrong length is the package's own bug and traps.
public struct ValidatedBytes<Value: FixedByteValue>: Sendable {
    /// The checked bytes.
    public let bytes: [UInt8]

    package init(_ bytes: [UInt8]) {
        precondition(bytes.count == Value.byteCount, "\(Value.self) is \(Value.byteCount) bytes")
        self.bytes = bytes
    }
}

extension FixedByteValue {
    /// The value with these bytes, or nil when there are not exactly `byteCount` of them.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.init(validated: ValidatedBytes(bytes))
    }

    /// Bytes the package itself made at the right length (a slice of stored hashes, a hash output): a wrong
    /// length is our bug and traps. Bytes from outside go through `init?(bytes:)`.
    package init(exactly bytes: [UInt8]) { self.init(validated: ValidatedBytes(bytes)) }

    /// SHA-256 of `input`, for the types that are SHA-256 outputs.
    init(hashing input: [UInt8]) {
        precondition(Self.byteCount == SHA256.byteCount, "\(Self.self) is not a SHA-256 output")
        self.init(validated: ValidatedBytes(SHA256.hash(input)))
    }

    /// Another fixed-length value of the same length with the same bytes (a transfer id as a statement id).
    public init(_ other: some FixedByteValue) {
        precondition(type(of: other).byteCount == Self.byteCount, "\(Self.self) is \(Self.byteCount) bytes")
        self.init(validated: ValidatedBytes(other.bytes))
    }

    /// The value made of `byteCount` zero bytes.
    public static var zero: Self { Self(validated: ValidatedBytes([UInt8](repeating: 0, count: byteCount))) }

    /// Lowercase hex of the bytes, for display and logs.
    public var hex: String { Hex.encode(bytes) }
    /// The same as `hex`.
    public var description: String { hex }

    /// A fresh value from the system CSPRNG.
    public static func random() -> Self { made(from: SystemRandom.bytes(byteCount)) }

    /// A value drawn from a seeded generator, for simulations and tests that must replay.
    public static func random(using generator: inout SeededRandom) -> Self { made(from: generator.bytes(byteCount)) }

    /// The value of bytes parsed from hex text: nil unless the text is hex of exactly `byteCount` bytes.
    public init?(hex text: String) {
        guard let bytes = Hex.decode(text) else { return nil }
        self.init(bytes: bytes)
    }

    private static func made(from bytes: [UInt8]) -> Self { Self(validated: ValidatedBytes(bytes)) }
}

extension ByteWriter {
    /// Writes a fixed-length value as its raw bytes, with no length prefix: the format fixes the length.
    package mutating func write(_ value: some FixedByteValue) {
        write(fixed: value.bytes, count: type(of: value).byteCount)
    }
}

extension ByteReader {
    /// Reads a fixed-length value: nil when the input ends early.
    package mutating func read<Value: FixedByteValue>(_ type: Value.Type) -> Value? {
        readFixed(Value.byteCount).flatMap(Value.init(bytes:))
    }
}

/// The 16 random bytes a payer or payee picks to name one payment exchange; a payment request's id becomes
/// the id of the offer that answers it. Unique per session, carried by every message of the exchange.
public struct OfferID: FixedByteValue {
    /// 16 bytes: 128 random bits make a collision between two live offers negligible.
    public static let byteCount = 16
    /// The id's bytes.
    public let bytes: [UInt8]
    /// The id with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }
}

/// The 16 random bytes a payer picks to name one transfer; unique per payer key, and the statement id of
/// the payer's debit, the payee's credit and the receipt or refusal.
public struct TransferID: FixedByteValue {
    /// The size of every ledger statement id.
    public static let byteCount = StatementID.byteCount
    /// The id's bytes.
    public let bytes: [UInt8]
    /// The id with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }
}

/// The 16 random bytes an issuer picks to name one voucher; unique per issuer key, and the statement id of
/// the deposit entry, so a voucher is deposited at most once.
public struct VoucherID: FixedByteValue {
    /// The size of every ledger statement id: collisions among one issuer's vouchers are negligible.
    public static let byteCount = StatementID.byteCount
    /// The id's bytes.
    public let bytes: [UInt8]
    /// The id with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }
}

/// SHA-256 of a piece of fork evidence's encoding: how a `hello` lists the evidence a wallet holds and an
/// evidence request names the pieces it wants.
public struct EvidenceDigest: FixedByteValue {
    /// 32 bytes: a SHA-256 output.
    public static let byteCount = SHA256.byteCount
    /// The digest's bytes.
    public let bytes: [UInt8]
    /// The digest with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }

    /// The digest of the evidence whose encoding is `encoded`.
    public init(of encoded: [UInt8]) { self.init(hashing: encoded) }
}

/// SHA-256 of a key event's encoding: what a rotation names as its previous event and a `hello`'s
/// key-event head carries. The inception event's digest is the wallet id (`WalletID(inception:)`).
public struct KeyEventDigest: FixedByteValue {
    /// 32 bytes: a SHA-256 output.
    public static let byteCount = SHA256.byteCount
    /// What the inception event names as its previous event: 32 zero bytes.
    public static let beforeInception = KeyEventDigest.zero
    /// The digest's bytes.
    public let bytes: [UInt8]
    /// The digest with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }

    /// The digest of the key event whose encoding is `encoded`.
    init(of encoded: [UInt8]) { self.init(hashing: encoded) }
}

/// A wallet's name for its whole life: SHA-256 of its inception key event (see docs/PROTOCOL.md). Key
/// rotations and recovery keep it; checkpoints, transfers, receipts, vouchers and key-event pages carry it.
public struct WalletID: FixedByteValue {
    /// 32 bytes: a SHA-256 output.
    public static let byteCount = SHA256.byteCount
    /// The id's bytes.
    public let bytes: [UInt8]
    /// The id with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }

    /// The id of the wallet whose inception event is `inception`.
    public init(inception: KeyEvent) { self.init(inception.digest) }
}

/// A SHA-256 output that names no particular kind of object: Merkle leaf, node and root hashes, chain
/// links, payload and statement digests, checkpoint and transfer digests, key fingerprints.
public struct Digest32: FixedByteValue {
    /// 32 bytes: a SHA-256 output.
    public static let byteCount = SHA256.byteCount
    /// The digest's bytes.
    public let bytes: [UInt8]
    /// The digest with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }

    /// SHA-256 of `input`.
    public init(of input: [UInt8]) { self.init(hashing: input) }

    /// SHA-256 of what `hasher` was given.
    init(finalizing hasher: SHA256.Hasher) { self.init(validated: ValidatedBytes(hasher.finalize())) }
}

extension P256.PublicKey {
    /// SHA-256 of the key's SubjectPublicKeyInfo (`fingerprint`), typed: what key events commit to as the
    /// next key and statement references name as the signer.
    public var fingerprintDigest: Digest32 { Digest32(exactly: fingerprint) }
}

/// The 16 random bytes each wallet puts in its `hello` towards the session nonce (`SessionNonce`).
public struct NonceContribution: FixedByteValue {
    /// 16 bytes: 128 bits from either side alone make the session nonce unpredictable.
    public static let byteCount = 16
    /// The contribution's bytes.
    public let bytes: [UInt8]
    /// The contribution with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }
}

/// The 16 bytes that name a signed statement within its signer's statements (a voucher's or a
/// transfer's id), and the random id of every ledger entry.
public struct StatementID: FixedByteValue {
    /// 16 bytes, as `LedgerEntry.idByteCount` fixes.
    public static let byteCount = 16
    /// The id's bytes.
    public let bytes: [UInt8]
    /// The id with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }
}
