import SecureCrypto

extension ClearingLimits {
    /// A settlement's note is a line for a person (a case number, a reason), not a document.
    public static let settlementNoteByteCountMax = 256
    /// Increments a wallet applies in one catch-up: a day of a busy issuer's changes; a wallet further behind
    /// catches up in several requests, so one answer stays bounded (4096 × 67 bytes ≈ 270 KiB).
    public static let listIncrementCountMax = 4096
    /// The default period after which a payer seen in others' credits that has not synced is listed
    /// unsynced (`--unsynced-after`, docs/CLEARING.md §2.9): a week covers a holiday offline.
    public static let unsyncedAfterMillisecondsDefault: Int64 = 7 * 24 * 3600 * 1000
}

/// Why a wallet is listed (docs/CLEARING.md §2.9). The raw values are part of the list increment encoding.
public enum ListingGrounds: UInt8, Hashable, Sendable, CaseIterable, Comparable {
    /// Fork evidence (types 1–7) proves the wallet signed two histories or a lie: wallets refuse it.
    case proven = 1
    /// A contradiction nothing proves offline: shown with unsynced, no effect alone.
    case inconsistent = 2
    /// A payer seen in others' credits that has not synced within the period: its credits are unbacked.
    case unsynced = 3

    public static func < (lhs: ListingGrounds, rhs: ListingGrounds) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One listing in force: the wallet, its grounds and the digest that grounds it (the evidence digest for
/// proven, the inconsistency's digest for inconsistent, 32 zero bytes for unsynced).
public struct Listing: Hashable, Sendable, Comparable {
    /// The listed wallet.
    public let wallet: WalletID
    /// Why.
    public let grounds: ListingGrounds
    /// What grounds it.
    public let digest: Digest32

    /// Collects the listing.
    public init(wallet: WalletID, grounds: ListingGrounds, digest: Digest32) {
        self.wallet = wallet
        self.grounds = grounds
        self.digest = digest
    }

    /// Ordered by wallet id bytes, then grounds: the order increments are published in.
    public static func < (lhs: Listing, rhs: Listing) -> Bool {
        if lhs.wallet != rhs.wallet { return lhs.wallet.bytes.lexicographicallyPrecedes(rhs.wallet.bytes) }
        return lhs.grounds < rhs.grounds
    }
}

/// One change to an issuer's list (docs/CLEARING.md §2.9). Its encoding is 67 bytes:
/// version u8 (1) ‖ operation u8 (1 add, 2 remove) ‖ wallet id 32 ‖ grounds u8 ‖ digest 32, where the digest
/// is the grounds' (evidence, inconsistency, or zeros) for an add, and for a remove the settlement's digest,
/// or the digest of the checkpoint whose sync resolved an unsynced or inconsistent listing.
public enum ListIncrement: Hashable, Sendable {
    /// The wallet is listed on these grounds.
    case add(wallet: WalletID, grounds: ListingGrounds, evidence: Digest32)
    /// The wallet's listing on these grounds ends.
    case remove(wallet: WalletID, grounds: ListingGrounds, settlement: Digest32)

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// Every increment is exactly this long.
    public static let encodedByteCount = 67
    /// The label of the list digest chain.
    public static let digestLabel = "secure-clearing-list-v1"

    /// The wallet it concerns.
    public var wallet: WalletID {
        switch self {
        case .add(let wallet, _, _), .remove(let wallet, _, _): wallet
        }
    }

    /// The grounds it adds or removes.
    public var grounds: ListingGrounds {
        switch self {
        case .add(_, let grounds, _), .remove(_, let grounds, _): grounds
        }
    }

    /// The canonical encoding.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: ListIncrement.encodedByteCount)
        writer.write(ListIncrement.encodingVersion)
        switch self {
        case .add(let wallet, let grounds, let digest):
            writer.write(UInt8(1))
            writer.write(wallet)
            writer.write(grounds.rawValue)
            writer.write(digest)
        case .remove(let wallet, let grounds, let digest):
            writer.write(UInt8(2))
            writer.write(wallet)
            writer.write(grounds.rawValue)
            writer.write(digest)
        }
        return writer.bytes
    }

    /// Decodes an increment that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ListIncrement? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "list increment") else { return nil }
        guard let operation = reader.readUInt8(), let wallet = reader.read(WalletID.self),
            let groundsByte = reader.readUInt8(), let digest = reader.read(Digest32.self)
        else { return nil }
        try reader.expectEnd("list increment")
        guard let grounds = ListingGrounds(rawValue: groundsByte) else {
            throw FormatError(.invalidValue, "listing grounds \(groundsByte) are not 1, 2 or 3")
        }
        switch operation {
        case 1: return .add(wallet: wallet, grounds: grounds, evidence: digest)
        case 2: return .remove(wallet: wallet, grounds: grounds, settlement: digest)
        default: throw FormatError(.invalidValue, "list operation \(operation) is not 1 (add) or 2 (remove)")
        }
    }

    /// digest(v) = SHA-256("secure-clearing-list-v1" ‖ 0x00 ‖ digest(v−1) ‖ increment v).
    public func chained(after previous: Digest32) -> Digest32 {
        var hasher = SHA256.Hasher()
        hasher.update(DomainLabel.bytes(ListIncrement.digestLabel))
        hasher.update(previous.bytes)
        hasher.update(encoded)
        return Digest32(finalizing: hasher)
    }
}

/// A list's version (the count of increments) and its chained digest; version 0 has 32 zero bytes.
public struct ListHead: Hashable, Sendable {
    /// The number of increments.
    public let version: UInt64
    /// digest(version).
    public let digest: Digest32

    /// Collects the head.
    public init(version: UInt64, digest: Digest32) {
        self.version = version
        self.digest = digest
    }

    /// The empty list.
    public static let empty = ListHead(version: 0, digest: Digest32(exactly: [UInt8](repeating: 0, count: 32)))

    /// The head after `increment`.
    public func appending(_ increment: ListIncrement) -> ListHead {
        ListHead(version: version + 1, digest: increment.chained(after: digest))
    }
}

/// The end of a listing, signed by the clearing key under `secure-clearing-settlement-v1`: the issuer, the
/// wallet, the list version that listed it, the grounds, their digest (evidence, inconsistency or zeros) and
/// a note. Encoding: version u8 (1) ‖ issuer 32 ‖ wallet 32 ‖ listing version u64 ‖ grounds u8 ‖ digest 32 ‖
/// u16 length ‖ note (UTF-8, ≤ 256 bytes).
public struct ClearingSettlement: Hashable, Sendable {
    /// The clearing's issuer.
    public let issuer: WalletID
    /// The wallet whose listing ends.
    public let wallet: WalletID
    /// The list version whose increment listed it.
    public let listingVersion: UInt64
    /// The grounds that end.
    public let grounds: ListingGrounds
    /// The digest those grounds named.
    public let groundsDigest: Digest32
    /// A line for people: why it was settled.
    public let note: String

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1

    /// Makes a settlement; the note must fit `ClearingLimits.settlementNoteByteCountMax`.
    public init(
        issuer: WalletID, wallet: WalletID, listingVersion: UInt64, grounds: ListingGrounds, groundsDigest: Digest32,
        note: String
    ) throws {
        guard note.utf8.count <= ClearingLimits.settlementNoteByteCountMax else {
            throw FormatError(
                .fieldTooLong, "a settlement note is at most \(ClearingLimits.settlementNoteByteCountMax) bytes")
        }
        self.issuer = issuer
        self.wallet = wallet
        self.listingVersion = listingVersion
        self.grounds = grounds
        self.groundsDigest = groundsDigest
        self.note = note
    }

    /// The canonical encoding, which is what the clearing key signs.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 110 + note.utf8.count)
        writer.write(ClearingSettlement.encodingVersion)
        writer.write(issuer)
        writer.write(wallet)
        writer.write(listingVersion)
        writer.write(grounds.rawValue)
        writer.write(groundsDigest)
        writer.write(prefixed16: Array(note.utf8), max: ClearingLimits.settlementNoteByteCountMax)
        return writer.bytes
    }

    /// SHA-256 of the encoding: what the `remove` increment names.
    public var digest: Digest32 { Digest32(of: encoded) }

    /// Decodes a settlement that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ClearingSettlement? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "settlement") else { return nil }
        guard let issuer = reader.read(WalletID.self), let wallet = reader.read(WalletID.self),
            let version = reader.readUInt64(), let groundsByte = reader.readUInt8(),
            let digest = reader.read(Digest32.self),
            let note = try reader.readPrefixed16(max: ClearingLimits.settlementNoteByteCountMax, field: "note")
        else { return nil }
        try reader.expectEnd("settlement")
        guard let grounds = ListingGrounds(rawValue: groundsByte) else {
            throw FormatError(.invalidValue, "listing grounds \(groundsByte) are not 1, 2 or 3")
        }
        guard let text = String(validating: note, as: UTF8.self) else {
            throw FormatError(.invalidValue, "a settlement note is not UTF-8")
        }
        return try ClearingSettlement(
            issuer: issuer, wallet: wallet, listingVersion: version, grounds: grounds, groundsDigest: digest,
            note: text)
    }

    /// Signs the settlement with the clearing key.
    public func sign(with signer: MessageSigner) throws -> SignedClearingSettlement {
        SignedClearingSettlement(settlement: self, signature: try signer.sign(encoded, label: .clearingSettlement))
    }
}

/// A settlement with the clearing key's signature. Encoding: version u8 (1) ‖ u16 length ‖ settlement ‖ u8
/// length ‖ DER signature.
public struct SignedClearingSettlement: Hashable, Sendable {
    /// What was signed.
    public let settlement: ClearingSettlement
    /// ECDSA P-256 over SHA-256("secure-clearing-settlement-v1" ‖ 0x00 ‖ settlement encoding).
    public let signature: ECDSASignature

    /// Pairs them; check `isValid(signedBy:)` before use.
    public init(settlement: ClearingSettlement, signature: ECDSASignature) {
        self.settlement = settlement
        self.signature = signature
    }

    /// Whether `clearingKey` signed it.
    public func isValid(signedBy clearingKey: P256.PublicKey) -> Bool {
        SignatureLabel.clearingSettlement.verify(signature, of: settlement.encoded, by: clearingKey)
    }

    /// The encoding.
    public var encoded: [UInt8] {
        ClearingSigned.encode(body: settlement.encoded, bodyMax: Self.settlementByteCountMax, signature: signature)
    }

    /// 1 + 32 + 32 + 8 + 1 + 32 + 2 + 256 bytes.
    static let settlementByteCountMax = 364

    /// Decodes a signed settlement that fills `bytes` exactly; the signature is parsed, not verified.
    public static func decode(_ bytes: [UInt8]) throws -> SignedClearingSettlement? {
        guard let framed = try ClearingSigned.decode(bytes, bodyMax: settlementByteCountMax, "settlement") else {
            return nil
        }
        guard let settlement = try ClearingSettlement.decode(framed.body) else {
            throw FormatError(.invalidValue, "the settlement inside a signed settlement is truncated")
        }
        return SignedClearingSettlement(settlement: settlement, signature: framed.signature)
    }
}

/// The frame of the clearing's signed values: version u8 (1) ‖ u16 length ‖ body ‖ u8 length ‖ DER signature.
enum ClearingSigned {
    static let encodingVersion: UInt8 = 1

    static func encode(body: [UInt8], bodyMax: Int, signature: ECDSASignature) -> [UInt8] {
        var writer = ByteWriter(capacity: body.count + 80)
        writer.write(encodingVersion)
        writer.write(prefixed16: body, max: bodyMax)
        writer.write(prefixed8: signature.der, max: 72)
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8], bodyMax: Int, _ what: String) throws -> (
        body: [UInt8], signature: ECDSASignature
    )? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "signed \(what)") else { return nil }
        guard let body = try reader.readPrefixed16(max: bodyMax, field: what),
            let der = try reader.readPrefixed8(max: 72, field: "signature")
        else { return nil }
        try reader.expectEnd("signed \(what)")
        guard let signature = try? ECDSASignature(der: der) else {
            throw FormatError(.invalidValue, "the \(what) signature is not a strict DER ECDSA signature")
        }
        return (body, signature)
    }
}

/// Why a wallet refuses a list update. A value, never thrown: the wallet keeps its list as it was.
public enum ListFollowRefusal: UInt8, Hashable, Sendable, CaseIterable {
    /// The head's signature does not verify under the clearing key, or names another issuer.
    case headInvalid = 1
    /// The head is older than the list the wallet holds: a rollback.
    case headBehind = 2
    /// The increments do not lead from the wallet's version to the head's (missing or extra increments).
    case gap = 3
    /// The chained digest of the increments is not the head's.
    case wrongDigest = 4
    /// An increment adds a listing in force, or removes one that is not.
    case invalidIncrement = 5
    /// More increments than `ClearingLimits.listIncrementCountMax` in one update.
    case tooMany = 6
}

/// A wallet's copy of one issuer's list: it applies increments only when their chain leads to a head the
/// clearing key signed, all or nothing.
public struct ClearingListFollower: Hashable, Sendable {
    /// The issuer whose list this is.
    public let issuer: WalletID
    /// The version and digest the wallet holds.
    public private(set) var head: ListHead
    /// The listings in force, by wallet.
    public private(set) var listings: [WalletID: [ListingGrounds: Digest32]]

    /// An empty list of `issuer`.
    public init(issuer: WalletID) {
        self.issuer = issuer
        head = .empty
        listings = [:]
    }

    /// Applies `increments`, versions `head.version + 1` onwards, if they end at `signedHead`'s list head and
    /// `clearingKey` signed it for this issuer. On any refusal nothing changes.
    public mutating func apply(
        _ increments: [ListIncrement], signedHead: SignedClearingTreeHead, clearingKey: P256.PublicKey
    ) -> ListFollowRefusal? {
        guard signedHead.isValid(signedBy: clearingKey), signedHead.head.issuer == issuer else { return .headInvalid }
        let target = signedHead.head.list
        guard target.version >= head.version else { return .headBehind }
        guard increments.count <= ClearingLimits.listIncrementCountMax else { return .tooMany }
        guard UInt64(increments.count) == target.version - head.version else { return .gap }
        var next = self
        for increment in increments {
            guard next.applyOne(increment) else { return .invalidIncrement }
        }
        guard next.head.digest == target.digest else { return .wrongDigest }
        self = next
        return nil
    }

    /// Whether `wallet` is listed on `grounds`.
    public func isListed(_ wallet: WalletID, _ grounds: ListingGrounds) -> Bool { listings[wallet]?[grounds] != nil }

    private mutating func applyOne(_ increment: ListIncrement) -> Bool {
        switch increment {
        case .add(let wallet, let grounds, let digest):
            guard listings[wallet]?[grounds] == nil else { return false }
            listings[wallet, default: [:]][grounds] = digest
        case .remove(let wallet, let grounds, _):
            guard listings[wallet]?[grounds] != nil else { return false }
            listings[wallet]?[grounds] = nil
            if listings[wallet]?.isEmpty == true { listings[wallet] = nil }
        }
        head = head.appending(increment)
        return true
    }
}
