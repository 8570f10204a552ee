import SecureCrypto

/// An entry with everything decided except where it goes: the wallet fills in the position, a fresh
/// random id, the time and the previous link when it appends. The statement checks (`VoucherCheck`,
/// `TransferCheck`, `RefusalCheck`) return drafts, so the rules for what an entry records live here in
/// pure code and the store only places them.
public struct EntryDraft: Hashable, Sendable {
    /// What the entry records.
    public let kind: EntryKind
    /// Override and proximity marks.
    public let flags: EntryFlags
    /// The amount, for kinds that move money.
    public let amount: AssetAmount?
    /// The spending category (payments out only), or "".
    public let category: String
    /// The other party: a wallet id or a key fingerprint.
    public let counterparty: [UInt8]
    /// The user's note.
    public let note: String
    /// The signed statement the entry records.
    public let statement: StatementReference?
    /// The statement's bytes, kept so the entry is self-describing and later checks need nothing else.
    public let payload: [UInt8]

    /// Collects the fields; `entry(position:id:time:previousLink:)` checks them against the entry rules.
    public init(
        kind: EntryKind, flags: EntryFlags = [], amount: AssetAmount?, category: String = "",
        counterparty: [UInt8] = [],
        note: String = "", statement: StatementReference?, payload: [UInt8]
    ) {
        self.kind = kind
        self.flags = flags
        self.amount = amount
        self.category = category
        self.counterparty = counterparty
        self.note = note
        self.statement = statement
        self.payload = payload
    }

    /// The entry at `position`, with a fresh 16-byte `id`, `time` in Unix milliseconds and the chain head.
    public func entry(position: UInt64, id: StatementID, time: Int64, previousLink: Digest32) throws -> LedgerEntry {
        try LedgerEntry(
            position: position, id: id, kind: kind, flags: flags, amount: amount, category: category,
            counterparty: counterparty, note: note, time: time, statement: statement, payload: payload,
            previousLink: previousLink)
    }
}

/// A payload that is signed as a whole under its own label by one named key. Each conforming type has a
/// canonical encoding with its own version byte; `SignedStatement` pairs it with the signature.
public protocol SignedPayload: Hashable, Sendable {
    /// The domain-separation label: a signature for this type never verifies as any other.
    static var signatureLabel: SignatureLabel { get }
    /// The largest encoding a decoder accepts, so a peer cannot make us read more.
    static var encodedByteCountMax: Int { get }
    /// The key whose signature makes this payload valid.
    var signerKey: P256.PublicKey { get }
    /// The canonical encoding, which is what gets signed and hashed.
    var encoded: [UInt8] { get }
    /// Decodes an encoding that fills `bytes` exactly: nil when short, throws when malformed.
    static func decode(_ bytes: [UInt8]) throws -> Self?
}

/// A payload with an ECDSA P-256 signature over SHA-256(label ‖ 0x00 ‖ encoding), low-s. Two deliveries
/// of one statement compare by `payloadDigest`, never by signature bytes: ECDSA signatures are randomized.
public struct SignedStatement<Payload: SignedPayload>: Hashable, Sendable {
    /// What was signed.
    public let payload: Payload
    /// The signature, by `payload.signerKey`.
    public let signature: ECDSASignature

    /// The encoding's version byte.
    public static var encodingVersion: UInt8 { 1 }
    /// A DER ECDSA P-256 signature is at most 72 bytes.
    public static var signatureByteCountMax: Int { 72 }

    /// Pairs a payload with a signature read from storage or a peer; check `isSignatureValid` before use.
    public init(payload: Payload, signature: ECDSASignature) {
        self.payload = payload
        self.signature = signature
    }

    /// Signs `payload` with its own signer key; the signer must hold that key.
    public init(signing payload: Payload, with signer: MessageSigner) throws {
        precondition(signer.publicKey == payload.signerKey, "a statement is signed by the key it names")
        self.payload = payload
        signature = try signer.sign(payload.encoded, label: Payload.signatureLabel)
    }

    /// Whether the signature verifies under the key the payload names, with the payload's label.
    public var isSignatureValid: Bool {
        Payload.signatureLabel.verify(signature, of: payload.encoded, by: payload.signerKey)
    }

    /// SHA-256 of the payload encoding: what ledgers record and compare.
    public var payloadDigest: Digest32 { Digest32(of: payload.encoded) }

    /// version u8 ‖ u32 length ‖ payload encoding ‖ u8 length ‖ DER signature.
    public var encoded: [UInt8] { ByteWriter.bytes { encode(into: &$0) } }

    func encode(into writer: inout ByteWriter) {
        writer.write(Self.encodingVersion)
        writer.write(prefixed32: payload.encoded, max: Payload.encodedByteCountMax)
        writer.write(prefixed8: signature.der, max: Self.signatureByteCountMax)
    }

    /// Decodes a signed statement that fills `bytes` exactly. The signature is parsed, not verified.
    public static func decode(_ bytes: [UInt8]) throws -> SignedStatement? {
        var reader = ByteReader(bytes)
        guard let signed = try decode(from: &reader) else { return nil }
        try reader.expectEnd("signed \(Payload.signatureLabel)")
        return signed
    }

    static func decode(from reader: inout ByteReader) throws -> SignedStatement? {
        guard try reader.readVersion(encodingVersion, of: "signed statement") else { return nil }
        guard let body = try reader.readPrefixed32(max: Payload.encodedByteCountMax, field: "signed payload"),
            let der = try reader.readPrefixed8(max: signatureByteCountMax, field: "signature")
        else { return nil }
        // The payload is a complete field here, so a short one is malformed rather than incomplete.
        guard let payload = try Payload.decode(body) else {
            throw FormatError(.invalidValue, "the payload inside a signed \(Payload.signatureLabel) is truncated")
        }
        guard let signature = try? ECDSASignature(der: der) else {
            throw FormatError(.invalidValue, "the signature is not a strict DER ECDSA signature")
        }
        return SignedStatement(payload: payload, signature: signature)
    }
}

/// What a wallet does with a signed statement it was handed. A value, not an error: each case tells the
/// wallet exactly what to record, and which cases record nothing.
public enum StatementVerdict: Hashable, Sendable {
    /// New and good: append this entry.
    case accept(EntryDraft)
    /// Seen before with the same payload: return the entry at `position` and record nothing.
    case duplicate(position: UInt64)
    /// The signer's id was seen with another payload: append this `conflictingStatement` entry, which keeps
    /// the second payload as evidence beside the first.
    case conflict(EntryDraft)
    /// Validly signed but failing a check: refused finally. Append this `statementRefused` entry; for a
    /// transfer, answer with a signed `Refusal` carrying `reason` so the payer can reverse its debit.
    case refuse(RefusalReason, record: EntryDraft)
    /// Refused by this wallet's own policy: record nothing, so the same statement can be accepted later.
    case policyRefusal(PolicyRefusalReason)
    /// Not provably from its signer (anyone could have forged it): drop it and record nothing.
    case drop(DropReason)
}

/// Why a validly signed statement failed a check. The raw values travel in signed refusals.
public enum RefusalReason: UInt8, Hashable, Sendable, CaseIterable {
    /// The statement names another wallet as its recipient. No longer signed: such a transfer gets a policy
    /// refusal (`notAddressedToThisWallet`) and nothing is recorded; the value stays reserved.
    case wrongRecipient = 1
    /// The payer's checkpoint is not signed by the payer's key or names another wallet.
    case checkpointInvalid = 2
    /// The debit leaf does not decode, or is not a payment out of exactly this transfer.
    case debitMismatch = 3
    /// The debit leaf's inclusion proof does not lead to the checkpoint's root, or the leaf is not its last.
    case inclusionProofInvalid = 4
    /// The transfer names a spatial proof other than the one this payee verified.
    case spatialProofMismatch = 5
    /// The transfer does not match the ready record the payee persisted for its offer.
    case readyRecordMismatch = 6
    /// The transfer's checkpoint does not extend the payer's `hello` checkpoint by exactly the debit.
    case checkpointNotExtending = 7
    /// Another transfer was already credited (or refused) for the same offer: one approval pays once. The
    /// second transfer is kept as a refused statement, and the payer reverses its second debit.
    case offerAlreadyCredited = 8
    /// Crediting the amount would take the payee's balance past the largest amount a wallet can hold
    /// (Int64.max minor units). The payee cannot credit it, so it refuses with a signature and the payer
    /// reverses its debit instead of waiting forever for an answer.
    case balanceOverflow = 9
    /// A voucher signed by an issuer key that the issuer's log, as this wallet holds it, shows retired, and
    /// that this wallet had not recorded before it learned of the rotation: a stolen retired key could sign
    /// it with any date before the rotation. Vouchers are never answered with a signed refusal; the value
    /// names the reason of the `statementRefused` entry that keeps the voucher.
    case retiredIssuerKey = 10
}

/// Why the wallet's own policy refused a statement without recording it.
public enum PolicyRefusalReason: Hashable, Sendable {
    /// The voucher's issuer is not among the issuers this wallet trusts.
    case untrustedIssuer
    /// The transfer moves an asset whose issuer this wallet does not trust: nothing is recorded or signed,
    /// so the payer reverses nothing and holds its money (the debit it made waits as pending).
    case untrustedAsset
    /// An issuer was paid back more of its asset than it has outstanding: someone signed money that was
    /// never minted. Nothing is recorded; the clearing is the one to find who.
    case redemptionExceedsOutstanding
    /// The transfer carries no proximity proof and `--no-proximity` was not given.
    case proximityRequired
    /// The transfer names a spatial proof this wallet has not verified (e.g. accepted from a file).
    case proximityUnverified
    /// The transfer is bound to another channel than the one it arrived on.
    case channelBindingMismatch
    /// The transfer names another wallet as its payee: this wallet neither credits nor refuses it.
    case notAddressedToThisWallet
    /// The payer signed a history that contradicts one this wallet holds: the fork evidence is kept.
    case payerForked
    /// Nothing proves the transfer's checkpoint extends the payer's checkpoint this wallet holds: both are
    /// kept as an unproven inconsistency for the clearing.
    case consistencyUnproven
    /// The envelope's consistency proof does not lead to the transfer's checkpoint.
    case consistencyProofInvalid
    /// The transfer is older than a checkpoint of the payer this wallet holds, and no kept proof links them.
    case staleTransfer
    /// The transfer came by file, signed by a payer key older than the latest key event this wallet knows of
    /// the payer: a key the payer rotated away from, perhaps because it was stolen, so a backdated transfer
    /// it signs is refused (an honest file written before the rotation is too, and stays pending).
    case signedBeforeRotation
    /// This wallet holds proven fork evidence it found itself against the payer (this digest): it takes no
    /// more payments from that wallet until the issuer's clearing settles it.
    case payerBanned(EvidenceDigest)
    /// Depositing the voucher would take the balance past the largest amount a wallet can hold. Not a policy
    /// but the wallet's present state: nothing is recorded, so the voucher, which only this wallet can use,
    /// is deposited once the balance is lower instead of being refused for good.
    case balanceOverflow
    /// Crediting the transfer would take what this wallet credited from the payer within its offline-limit
    /// window, with the payer's approvals not yet paid, past the limit (`secure policy`). Nothing is
    /// recorded or signed: the payer's debit stays pending, and the same file is accepted once the window has
    /// room (or the limit is raised).
    case offlineLimitExceeded(OfflineAllowance)
}

/// Why a statement was dropped.
public enum DropReason: Hashable, Sendable {
    /// The signature does not verify under the key the statement names.
    case badSignature
    /// A statement whose signer's key-event log does not show its key in force for the wallet it claims.
    case unknownSigner
    /// A refusal or receipt that is about another transfer than the one it was matched with.
    case unrelated
    /// A statement signed by a key of its signer's log after the key's retirement: the evidence proves it.
    case retiredSigner(ForkEvidence)
}

extension StatementVerdict {
    /// The verdict for a validly signed, checked statement given what the ledger already holds. A
    /// re-delivery is a duplicate whatever else holds (idempotence); a final failure is refused whatever
    /// the policy says; only then does `accept` apply policy and build the entry.
    static func resolve(
        reference: StatementReference, payload: [UInt8], counterparty: [UInt8], state: LedgerState,
        failure: RefusalReason?, accept: () -> StatementVerdict
    ) -> StatementVerdict {
        switch state.lookup(reference) {
        case .duplicate(let position): return .duplicate(position: position)
        case .conflict:
            return .conflict(
                EntryDraft(
                    kind: .conflictingStatement, amount: nil, counterparty: counterparty, statement: reference,
                    payload: payload))
        case .new: break
        }
        if let failure {
            return .refuse(
                failure,
                record: EntryDraft(
                    kind: .statementRefused, amount: nil, counterparty: counterparty, statement: reference,
                    payload: payload))
        }
        return accept()
    }
}

extension ByteWriter {
    /// The bytes `write` puts into a fresh writer.
    static func bytes(_ write: (inout ByteWriter) -> Void) -> [UInt8] {
        var writer = ByteWriter()
        write(&writer)
        return writer.bytes
    }
}
