import SecureCrypto

/// What an entry records. The raw values are part of the entry encoding and never change meaning.
public enum EntryKind: UInt8, Sendable, CaseIterable {
    /// A credit from an issuer voucher; `statement` names the voucher.
    case deposit = 1
    /// A debit by a transfer this wallet signed; `statement` names the transfer.
    case paymentOut = 2
    /// A credit by a transfer another wallet signed; `statement` names it.
    case paymentIn = 3
    /// A credit that undoes a refused payment out; `statement` names the payee's signed refusal and its
    /// id is the refused transfer's id.
    case reversal = 4
    /// A budget set or removed; the payload is a `BudgetChange` encoding.
    case budgetChange = 5
    /// A key event (inception, rotation); the payload belongs to the key-event log.
    case keyEvent = 6
    /// The signed statement recorded when leaving a rollback lock with `--accept-rollback`.
    case rollbackAccepted = 7
    /// A validly signed statement that failed a check, recorded under its payload hash.
    case statementRefused = 8
    /// A second signed payload under an id already seen, kept as evidence.
    case conflictingStatement = 9
    /// The payee's countersigned receipt of a payment out: `statement` names the receipt (payee key
    /// fingerprint, transfer id, receipt digest). A confirmed payment can no longer be reversed.
    case confirmation = 10
    /// A signed change to the wallet's settings; the payload is a `SettingsChange` (tag ‖ body). The
    /// settings in force are derived from these entries alone.
    case settings = 11
    /// An issuer's voucher, recorded in the issuer's own ledger as a liability: `statement` names the
    /// voucher, the amount is the asset minted, and the outstanding total grows by it. Only an issuer's
    /// ledger holds it.
    case mint = 12
    /// Money of an issuer's own asset paid back to it: `statement` names the payer's transfer, and the
    /// outstanding total shrinks by the amount. Only an issuer's ledger holds it.
    case redemption = 13

    /// Whether entries of this kind carry an amount, and which way it moves the balance.
    var direction: Direction {
        switch self {
        case .deposit, .paymentIn, .reversal, .mint: .credit
        case .paymentOut, .redemption: .debit
        case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .confirmation,
            .settings:
            .none
        }
    }

    /// Whether the entry must name the signed statement it records.
    var needsStatement: Bool {
        switch self {
        case .deposit, .paymentOut, .paymentIn, .reversal, .statementRefused, .conflictingStatement, .confirmation,
            .mint, .redemption:
            true
        case .budgetChange, .keyEvent, .rollbackAccepted, .settings: false
        }
    }

    enum Direction { case credit, debit, none }
}

/// Flags recorded in an entry; unknown bits are refused by the decoder.
public struct EntryFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The payer overrode an over-budget verdict (payment out only).
    public static let budgetOverride = EntryFlags(rawValue: 1 << 0)
    /// The transfer carried no proximity proof (payments only).
    public static let withoutProximity = EntryFlags(rawValue: 1 << 1)

    static let known: EntryFlags = [.budgetOverride, .withoutProximity]
}

/// The signed statement an entry records, scoped by its signer: ids are chosen by whoever signs
/// (the issuer for a voucher, the payer for a transfer), so only (signer, id) is unique.
public struct StatementReference: Hashable, Sendable {
    /// SHA-256 of the signer's SubjectPublicKeyInfo.
    public let signer: Digest32
    /// The statement id the signer chose.
    public let id: StatementID
    /// SHA-256 of the signed payload (not of the signature: ECDSA signatures are randomized).
    public let payloadDigest: Digest32

    /// Bytes in an encoded reference: the signer fingerprint, the id and the payload digest.
    static let encodedByteCount = 2 * Digest32.byteCount + StatementID.byteCount

    /// Makes a reference; the types fix every length.
    public init(signer: Digest32, id: StatementID, payloadDigest: Digest32) {
        self.signer = signer
        self.id = id
        self.payloadDigest = payloadDigest
    }

    /// The reference to a statement by the signer's key, a typed id and the SHA-256 of the payload.
    init(signer key: P256.PublicKey, id: some FixedByteValue, payloadDigest: Digest32) {
        self.init(signer: key.fingerprintDigest, id: StatementID(id), payloadDigest: payloadDigest)
    }

    /// The key the state indexes statements by.
    var key: StatementKey { StatementKey(signer: signer, id: id) }
}

/// (signer, id): the scope in which statement ids are unique.
struct StatementKey: Hashable, Sendable {
    let signer: Digest32
    let id: StatementID

    // Hashes the bytes as blocks: the synthesized conformance feeds the hasher one byte at a time, which
    // showed in a full verification (one dictionary insert per entry that records a statement).
    func hash(into hasher: inout Hasher) {
        signer.bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        id.bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// One ledger entry. Entries are append-only; the chain and the Merkle tree both commit to the canonical
/// encoding below, so every field is covered. See docs/PROTOCOL.md, "Ledger entry encoding".
public struct LedgerEntry: Hashable, Sendable {
    /// The position n, counting from 0 (the inception event).
    public let position: UInt64
    /// A random id chosen when the entry is made, or the id of the statement it records.
    public let id: StatementID
    /// What the entry records.
    public let kind: EntryKind
    /// Override and proximity marks.
    public let flags: EntryFlags
    /// The amount and its asset, for kinds that move money; nil otherwise.
    public let amount: AssetAmount?
    /// The spending category, or "" for none.
    public let category: String
    /// The other party: a wallet id or a key fingerprint; empty for none.
    public let counterparty: [UInt8]
    /// The user's note.
    public let note: String
    /// When the entry was made, in Unix milliseconds.
    public let time: Int64
    /// The signed statement this entry records, for kinds that record one.
    public let statement: StatementReference?
    /// Kind-specific bytes: the signed voucher, transfer or refusal; a budget change; a key event.
    public let payload: [UInt8]
    /// The chain link of the previous entry, h(n−1); 32 zero bytes for entry 0.
    public let previousLink: Digest32

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 2
    /// Random entry ids are 16 bytes: collisions are negligible at any ledger size a wallet reaches.
    public static let idByteCount = StatementID.byteCount
    /// A wallet id, a fingerprint (32 bytes) or an uncompressed point (65) fits; 128 leaves room for an SPKI.
    public static let counterpartyByteCountMax = 128
    /// A note is a line of text for a person, not a document; 512 bytes keeps history rows small.
    public static let noteByteCountMax = 512
    /// The payload holds one signed statement with its inclusion proof and checkpoint (a few KiB at
    /// most); 64 KiB bounds what a peer can make us store per entry.
    public static let payloadByteCountMax = 65_536

    /// Makes an entry, checking every field and the rules of its kind.
    public init(
        position: UInt64, id: StatementID, kind: EntryKind, flags: EntryFlags = [], amount: AssetAmount?,
        category: String = "", counterparty: [UInt8] = [], note: String = "", time: Int64,
        statement: StatementReference? = nil, payload: [UInt8] = [], previousLink: Digest32
    ) throws {
        self.position = position
        self.id = id
        self.kind = kind
        self.flags = flags
        self.amount = amount
        self.category = category
        self.counterparty = counterparty
        self.note = note
        self.time = time
        self.statement = statement
        self.payload = payload
        self.previousLink = previousLink
        try validateFields()
        try validateKind()
    }

    private func validateFields() throws {
        func refuse(_ why: String) -> LedgerError { LedgerError(.invalidEntry, "entry \(position): \(why)") }
        guard EntryFlags.known.isSuperset(of: flags) else { throw refuse("unknown flag bits \(flags.rawValue)") }
        guard category.isEmpty || (try? Budget.validateCategory(category)) != nil else {
            throw refuse("the category must be 1 to \(Budget.categoryByteCountMax) bytes without control characters")
        }
        guard counterparty.count <= LedgerEntry.counterpartyByteCountMax else {
            throw refuse("the counterparty is over \(LedgerEntry.counterpartyByteCountMax) bytes")
        }
        guard note.utf8.count <= LedgerEntry.noteByteCountMax else {
            throw refuse("the note is over \(LedgerEntry.noteByteCountMax) bytes")
        }
        guard payload.count <= LedgerEntry.payloadByteCountMax else {
            throw refuse("the payload is over \(LedgerEntry.payloadByteCountMax) bytes")
        }
        guard LedgerTime.isValid(time) else { throw refuse("the time \(time) lies outside 1970 to 9999") }
    }

    private func validateKind() throws {
        func refuse(_ why: String) -> LedgerError { LedgerError(.invalidEntry, "entry \(position) (\(kind)): \(why)") }
        switch kind.direction {
        case .credit, .debit:
            guard let amount, !amount.isZero else { throw refuse("a positive amount is required") }
        case .none:
            guard amount == nil else { throw refuse("this kind carries no amount") }
        }
        guard kind.needsStatement == (statement != nil) else {
            throw refuse(kind.needsStatement ? "the signed statement must be named" : "this kind names no statement")
        }
        if flags.contains(.budgetOverride) && kind != .paymentOut {
            throw refuse("only a payment out can override a budget")
        }
        // A redemption is an issuer's payment in, marked like any other credit of a transfer.
        if flags.contains(.withoutProximity) && kind != .paymentOut && kind != .paymentIn && kind != .redemption {
            throw refuse("only payments can be marked as made without proximity")
        }
        if kind == .budgetChange {
            guard !category.isEmpty else { throw refuse("a budget change names its category") }
            _ = try BudgetChange.decode(payload: payload, category: category)
        }
        if kind == .settings {
            guard category.isEmpty, counterparty.isEmpty else { throw refuse("a settings entry names no party") }
            _ = try SettingsChange.decode(payload: payload)
        }
    }

    /// The canonical encoding; δ(n) and the Merkle leaf are computed over exactly these bytes.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 200 + payload.count + note.utf8.count)
        writer.write(LedgerEntry.encodingVersion)
        writer.write(position)
        writer.write(id)
        writer.write(kind.rawValue)
        writer.write(flags.rawValue)
        if let amount {
            writer.write(UInt8(1))
            amount.encode(into: &writer)
        } else {
            writer.write(UInt8(0))
        }
        writer.write(prefixed8: Array(category.utf8), max: Budget.categoryByteCountMax)
        writer.write(prefixed8: counterparty, max: LedgerEntry.counterpartyByteCountMax)
        writer.write(prefixed16: Array(note.utf8), max: LedgerEntry.noteByteCountMax)
        writer.write(time)
        if let statement {
            writer.write(UInt8(1))
            writer.write(statement.signer)
            writer.write(statement.id)
            writer.write(statement.payloadDigest)
        } else {
            writer.write(UInt8(0))
        }
        writer.write(prefixed32: payload, max: LedgerEntry.payloadByteCountMax)
        writer.write(previousLink)
        return writer.bytes
    }

    /// δ(n) = SHA-256(encoding).
    public var digest: Digest32 { Digest32(of: encoded) }

    /// h(n), this entry's chain link.
    public var link: Digest32 {
        LedgerChain.link(previous: previousLink, position: position, entryDigest: digest, id: id)
    }
}

extension LedgerEntry {
    /// Decodes one entry that fills `bytes` exactly. Returns nil when the bytes end early; throws on a
    /// malformed field, a broken rule of the entry's kind or trailing bytes.
    public static func decode(_ bytes: [UInt8]) throws -> LedgerEntry? {
        var reader = ByteReader(bytes)
        guard let entry = try decode(from: &reader) else { return nil }
        try reader.expectEnd("ledger entry")
        return entry
    }

    static func decode(from reader: inout ByteReader) throws -> LedgerEntry? {
        guard try reader.readVersion(encodingVersion, of: "ledger entry") else { return nil }
        guard let position = reader.readUInt64(), let id = reader.read(StatementID.self),
            let kindByte = reader.readUInt8(), let flagByte = reader.readUInt8(),
            let amountTag = reader.readUInt8()
        else { return nil }
        guard let kind = EntryKind(rawValue: kindByte) else {
            throw FormatError(.invalidValue, "entry kind \(kindByte) is not known")
        }
        let amount: AssetAmount?
        switch amountTag {
        case 0: amount = nil
        case 1:
            guard let decoded = try AssetAmount.decode(from: &reader) else { return nil }
            amount = decoded
        default: throw FormatError(.invalidValue, "the amount presence byte is \(amountTag), not 0 or 1")
        }
        guard let category = try reader.readPrefixed8(max: Budget.categoryByteCountMax, field: "category"),
            let counterparty = try reader.readPrefixed8(max: counterpartyByteCountMax, field: "counterparty"),
            let note = try reader.readPrefixed16(max: noteByteCountMax, field: "note"),
            let time = reader.readInt64(), let statementTag = reader.readUInt8()
        else { return nil }
        var statement: StatementReference?
        switch statementTag {
        case 0: statement = nil
        case 1:
            guard let signer = reader.read(Digest32.self), let statementID = reader.read(StatementID.self),
                let payloadDigest = reader.read(Digest32.self)
            else { return nil }
            statement = StatementReference(signer: signer, id: statementID, payloadDigest: payloadDigest)
        default: throw FormatError(.invalidValue, "the statement presence byte is \(statementTag), not 0 or 1")
        }
        guard let payload = try reader.readPrefixed32(max: payloadByteCountMax, field: "payload"),
            let previousLink = reader.read(Digest32.self)
        else { return nil }
        do {
            return try LedgerEntry(
                position: position, id: id, kind: kind, flags: EntryFlags(rawValue: flagByte), amount: amount,
                category: try utf8(category, "category"), counterparty: counterparty, note: try utf8(note, "note"),
                time: time, statement: statement, payload: payload, previousLink: previousLink)
        } catch let error as LedgerError {
            throw FormatError(.invalidValue, error.message)
        } catch let error as BudgetError {
            throw FormatError(.invalidValue, error.message)
        }
    }

    /// Strict UTF-8: a string that does not round-trip is refused, so one text has one encoding.
    private static func utf8(_ bytes: [UInt8], _ field: String) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw FormatError(.invalidValue, "the \(field) is not valid UTF-8")
        }
        return text
    }
}
