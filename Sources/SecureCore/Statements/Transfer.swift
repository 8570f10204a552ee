import SecureCrypto

/// Whether a transfer was made next to its payee, and if so which spatial proof shows it.
public enum Proximity: Hashable, Sendable {
    /// No proximity proof: a file transfer made with `secure spend --out`. A payee accepts it only with
    /// `--no-proximity`, and both ledgers mark the payment so.
    case none
    /// SHA-256 of the `SpatialProof` encoding the two wallets made in their session.
    case spatialProof(digest: Digest32)
}

/// What a payer orders: the part of a transfer known before the debit is appended. Its encoding is the
/// payload of the payer's `paymentOut` entry and its digest is that entry's statement digest, so the
/// debit leaf that the transfer carries names exactly this order. (The signed transfer itself cannot be
/// named by the debit: it contains the checkpoint that commits to the debit.)
public struct TransferOrder: Hashable, Sendable {
    /// 16 random bytes chosen by the payer; unique per payer key.
    public let transferID: TransferID
    /// The payer's wallet id.
    public let payerWalletID: WalletID
    /// The payer's current signing key.
    public let payerKey: P256.PublicKey
    /// The payee's wallet id.
    public let payeeWalletID: WalletID
    /// The amount and its asset; never zero.
    public let amount: AssetAmount
    /// The spatial proof, or none.
    public let proximity: Proximity
    /// The secure channel's binding the transfer was made for; empty for file transfers.
    public let channelBinding: [UInt8]

    /// The encoding's version byte: 2 since the amount names its asset (version 1 is refused).
    public static let encodingVersion: UInt8 = 2
    /// Channel bindings are exporter values or transcript hashes: 32 bytes today, 64 leaves room for a
    /// SHA-512-based channel.
    public static let channelBindingByteCountMax = 64
    /// 1 + 16 + 32 + 65 + 32 + 44 + 33 + 65 = 288 bytes at most.
    public static let encodedByteCountMax = 288

    /// Makes an order, checking the channel binding's length and a positive amount.
    public init(
        transferID: TransferID, payerWalletID: WalletID, payerKey: P256.PublicKey, payeeWalletID: WalletID,
        amount: AssetAmount, proximity: Proximity, channelBinding: [UInt8]
    ) throws {
        guard !amount.isZero else { throw FormatError(.invalidValue, "a transfer's amount must be positive") }
        guard channelBinding.count <= TransferOrder.channelBindingByteCountMax else {
            throw FormatError(
                .fieldTooLong, "a channel binding is at most \(TransferOrder.channelBindingByteCountMax) bytes")
        }
        self.transferID = transferID
        self.payerWalletID = payerWalletID
        self.payerKey = payerKey
        self.payeeWalletID = payeeWalletID
        self.amount = amount
        self.proximity = proximity
        self.channelBinding = channelBinding
    }

    /// The canonical encoding (see docs/PROTOCOL.md, "Transfers, receipts and refusals").
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: TransferOrder.encodedByteCountMax)
        writer.write(TransferOrder.encodingVersion)
        writer.write(transferID)
        writer.write(payerWalletID)
        writer.write(fixed: payerKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(payeeWalletID)
        amount.encode(into: &writer)
        switch proximity {
        case .none: writer.write(UInt8(0))
        case .spatialProof(let digest):
            writer.write(UInt8(1))
            writer.write(digest)
        }
        writer.write(prefixed8: channelBinding, max: TransferOrder.channelBindingByteCountMax)
        return writer.bytes
    }

    /// SHA-256 of the encoding: the statement digest of the payer's debit entry.
    public var digest: Digest32 { Digest32(of: encoded) }

    /// Decodes an order that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> TransferOrder? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "transfer order") else { return nil }
        guard let transferID = reader.read(TransferID.self), let payer = reader.read(WalletID.self),
            let point = reader.readFixed(P256.uncompressedPointByteCount), let payee = reader.read(WalletID.self),
            let amount = try AssetAmount.decode(from: &reader), let tag = reader.readUInt8()
        else { return nil }
        let proximity: Proximity
        switch tag {
        case 0: proximity = .none
        case 1:
            guard let digest = reader.read(Digest32.self) else { return nil }
            proximity = .spatialProof(digest: digest)
        default: throw FormatError(.invalidValue, "proximity tag \(tag) is not 0 or 1")
        }
        guard let binding = try reader.readPrefixed8(max: channelBindingByteCountMax, field: "channel binding") else {
            return nil
        }
        try reader.expectEnd("transfer order")
        return try TransferOrder(
            transferID: transferID, payerWalletID: payer, payerKey: try decodeKey(point, "payer key"),
            payeeWalletID: payee, amount: amount, proximity: proximity, channelBinding: binding)
    }

    /// The statement the payer's debit records: (payer key fingerprint, transfer id, order digest).
    public var debitReference: StatementReference {
        StatementReference(signer: payerKey, id: transferID, payloadDigest: digest)
    }

    /// The payer's `paymentOut` entry for this order: counterparty = payee wallet id, payload = the order
    /// encoding, marked `withoutProximity` when there is no spatial proof, and `budgetOverride` when the
    /// user overrode an over-budget verdict. The category and note are the payer's own.
    public func debitDraft(category: String, note: String = "", overridesBudget: Bool = false) -> EntryDraft {
        var flags: EntryFlags = overridesBudget ? [.budgetOverride] : []
        if proximity == .none { flags.insert(.withoutProximity) }
        return EntryDraft(
            kind: .paymentOut, flags: flags, amount: amount, category: category, counterparty: payeeWalletID.bytes,
            note: note, statement: debitReference, payload: encoded)
    }
}

/// A signed transfer's payload: the order, the payer's checkpoint right after the debit, and the debit
/// entry with its inclusion proof in that checkpoint. The payee keeps the leaf and proof: they are what
/// makes a later fork provable. See docs/PROTOCOL.md, "Transfers, receipts and refusals".
public struct Transfer: SignedPayload {
    /// What the payer ordered.
    public let order: TransferOrder
    /// The payer's checkpoint whose last entry is the debit.
    public let checkpoint: SignedCheckpoint
    /// The debit entry's encoding (its Merkle leaf).
    public let debitLeaf: [UInt8]
    /// The leaf's RFC 9162 inclusion proof in the checkpoint's tree.
    public let inclusionProof: [Digest32]

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    public static let signatureLabel = SignatureLabel("secure-transfer-v1")
    /// A debit entry holds the order (≤ 256 bytes) as its payload, a category (≤ 64) and a note (≤ 512)
    /// beside about 300 bytes of fixed fields: 4 KiB is ample and keeps transfers far below the entry
    /// payload limit, since the payee stores the whole signed transfer in its credit entry.
    public static let debitLeafByteCountMax = 4096
    /// Order, signed checkpoint (≤ 32,844), leaf and a 65-hash proof stay below 40 KiB; 48 KiB bounds
    /// what a peer can hand us while a signed transfer still fits an entry payload (64 KiB).
    public static let encodedByteCountMax = 49_152

    /// Collects the parts; `TransferCheck` decides whether they hold together.
    public init(order: TransferOrder, checkpoint: SignedCheckpoint, debitLeaf: [UInt8], inclusionProof: [Digest32])
        throws
    {
        guard debitLeaf.count <= Transfer.debitLeafByteCountMax else {
            throw FormatError(.fieldTooLong, "a debit leaf is at most \(Transfer.debitLeafByteCountMax) bytes")
        }
        guard inclusionProof.count <= Merkle.proofHashCountMax else {
            throw FormatError(.invalidValue, "an inclusion proof is at most \(Merkle.proofHashCountMax) hashes")
        }
        self.order = order
        self.checkpoint = checkpoint
        self.debitLeaf = debitLeaf
        self.inclusionProof = inclusionProof
    }

    public var signerKey: P256.PublicKey { order.payerKey }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 4096)
        writer.write(Transfer.encodingVersion)
        writer.write(prefixed16: order.encoded, max: TransferOrder.encodedByteCountMax)
        checkpoint.encode(into: &writer)
        writer.write(prefixed16: debitLeaf, max: Transfer.debitLeafByteCountMax)
        writer.write(proof: inclusionProof)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Transfer? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "transfer") else { return nil }
        guard let orderBytes = try reader.readPrefixed16(max: TransferOrder.encodedByteCountMax, field: "order"),
            let checkpoint = try SignedCheckpoint.decode(from: &reader),
            let leaf = try reader.readPrefixed16(max: debitLeafByteCountMax, field: "debit leaf"),
            let proof = try reader.readProof()
        else { return nil }
        try reader.expectEnd("transfer")
        guard let order = try TransferOrder.decode(orderBytes) else {
            throw FormatError(.invalidValue, "the order inside a transfer is truncated")
        }
        return try Transfer(order: order, checkpoint: checkpoint, debitLeaf: leaf, inclusionProof: proof)
    }

    /// Signs the transfer with the payer's key.
    public func sign(with signer: MessageSigner) throws -> SignedTransfer {
        try SignedTransfer(signing: self, with: signer)
    }
}

/// A transfer with the payer's signature.
public typealias SignedTransfer = SignedStatement<Transfer>

extension SignedStatement where Payload == Transfer {
    /// The reference the payee's credit (or refusal record) names: (payer key fingerprint, transfer id,
    /// SHA-256 of the signed transfer payload). The payer's own debit names the order digest instead.
    public var statementReference: StatementReference {
        StatementReference(signer: payload.order.payerKey, id: payload.order.transferID, payloadDigest: payloadDigest)
    }

    /// Whether this transfer's signature verifies under `key`, which must be the payer key it names.
    public func verify(against key: P256.PublicKey) -> Bool { payload.order.payerKey == key && isSignatureValid }
}

/// What the payee's wallet allows beyond the ledger rules. Refusals by policy record nothing.
public struct TransferPolicy: Hashable, Sendable {
    /// `--no-proximity`: accept a transfer without a proximity proof (or with one this wallet cannot check).
    public var acceptsWithoutProximity: Bool
    /// The digest of the spatial proof this wallet verified for this transfer, when it arrived in a peer
    /// session; nil for a transfer read from a file.
    public var verifiedSpatialProof: Digest32?
    /// The channel binding the transfer must carry, when it arrived on a channel; nil to skip the check
    /// (files, and retries, which are matched against the persisted ready record instead).
    public var channelBinding: [UInt8]?
    /// The issuers whose assets this wallet takes, derived from its signed trust entries. A transfer of any
    /// other asset gets a policy refusal (`untrustedAsset`); an issuer takes back only its own asset.
    public var trustedIssuers: Set<WalletID>

    /// A policy; the defaults are those of `secure accept FILE` without `--no-proximity`.
    public init(
        trustedIssuers: Set<WalletID> = [], acceptsWithoutProximity: Bool = false,
        verifiedSpatialProof: Digest32? = nil,
        channelBinding: [UInt8]? = nil
    ) {
        self.trustedIssuers = trustedIssuers
        self.acceptsWithoutProximity = acceptsWithoutProximity
        self.verifiedSpatialProof = verifiedSpatialProof
        self.channelBinding = channelBinding
    }
}

/// The checks `secure accept` and the payee's peer session make before crediting a transfer.
public enum TransferCheck {
    /// The verdict for crediting `transfer` to the wallet `walletID` whose ledger is at `state`.
    ///
    /// In order: the payer's signature (else dropped); a re-delivery (duplicate: the original entry, or a
    /// conflict kept as evidence); the checks below (else refused finally and answered with a signed
    /// refusal); the policy (else refused without a record); and then a `paymentIn` entry: the amount,
    /// counterparty = payer wallet id, statement = (payer fingerprint, transfer id, payload digest),
    /// payload = the signed transfer, marked `withoutProximity` when accepted without a verified proof.
    ///
    /// The checks: addressed to `walletID`; the checkpoint is the payer's wallet and signed by the payer
    /// key; the debit leaf is a `paymentOut` of exactly this order (amount, transfer id, payee, order
    /// digest and payload, proximity mark), it is the checkpoint's last entry (position size − 1, its
    /// link the head), and its inclusion proof leads to the checkpoint root; a spatial proof, when both
    /// the transfer and the policy name one, is the same. `peerFailure` is a failed check of the peer
    /// protocol (the ready record, the `hello` checkpoint), refused finally like the others. Last, a credit
    /// that would take the balance past the largest amount is refused too (`balanceOverflow`): the payee
    /// cannot credit it, and a signed refusal lets the payer reverse instead of waiting for ever.
    public static func evaluate(
        _ transfer: SignedTransfer, walletID: WalletID, payerLog: KeyEventLog, state: LedgerState,
        policy: TransferPolicy, peerFailure: RefusalReason? = nil
    ) -> StatementVerdict {
        guard transfer.isSignatureValid else { return .drop(.badSignature) }
        if let reason = signerFailure(transfer, payerLog: payerLog) { return .drop(reason) }
        let order = transfer.payload.order
        // A transfer to another wallet is none of this wallet's business: it records and signs nothing,
        // so a bystander cannot make a refusal that the payer could use against the real payee.
        guard order.payeeWalletID == walletID else { return .policyRefusal(.notAddressedToThisWallet) }
        let reference = transfer.statementReference
        let bytes = transfer.encoded
        return StatementVerdict.resolve(
            reference: reference, payload: bytes, counterparty: order.payerWalletID.bytes, state: state,
            failure: refusalReason(
                transfer, walletID: walletID, policy: policy, peerFailure: peerFailure, state: state)
        ) {
            var flags: EntryFlags = []
            switch order.proximity {
            case .none:
                guard policy.acceptsWithoutProximity else { return .policyRefusal(.proximityRequired) }
                flags = .withoutProximity
            case .spatialProof:
                if policy.verifiedSpatialProof == nil {
                    guard policy.acceptsWithoutProximity else { return .policyRefusal(.proximityUnverified) }
                    flags = .withoutProximity
                }
            }
            if let binding = policy.channelBinding, binding != order.channelBinding {
                return .policyRefusal(.channelBindingMismatch)
            }
            if let refusal = assetRefusal(order.amount, walletID: walletID, policy: policy, state: state) {
                return .policyRefusal(refusal)
            }
            return .accept(
                EntryDraft(
                    kind: state.isIssuer ? .redemption : .paymentIn, flags: flags, amount: order.amount,
                    counterparty: order.payerWalletID.bytes,
                    statement: reference, payload: bytes))
        }
    }

    /// Why this wallet will not take `amount`, or nil: an ordinary wallet takes only assets of issuers it
    /// trusts; an issuer takes back only its own asset, and never more than it has outstanding.
    public static func assetRefusal(
        _ amount: AssetAmount, walletID: WalletID, policy: TransferPolicy, state: LedgerState
    ) -> PolicyRefusalReason? {
        if state.isIssuer {
            guard amount.issuer == walletID else { return .untrustedAsset }
            // A state with no entries is the one `ledger verify` checks a recorded statement against; the
            // replay itself refuses a redemption beyond what is outstanding.
            guard state.size == 0 || amount.money <= state.balance(amount.asset) else {
                return .redemptionExceedsOutstanding
            }
            return nil
        }
        return policy.trustedIssuers.contains(amount.issuer) ? nil : .untrustedAsset
    }

    /// Why the payer of a validly signed transfer is not proven, or nil when it is: the payer's log must be
    /// the payer wallet's, and show the order's key in force for the transfer's checkpoint (which that key
    /// signs). A retired key's late transfer is dropped with fork evidence.
    static func signerFailure(_ transfer: SignedTransfer, payerLog: KeyEventLog) -> DropReason? {
        let order = transfer.payload.order
        let checkpoint = transfer.payload.checkpoint
        guard payerLog.walletID == order.payerWalletID, checkpoint.checkpoint.walletKey == order.payerKey else {
            return .unknownSigner
        }
        switch payerLog.check(checkpoint) {
        case .inForce: return nil
        case .retired(let rotation):
            let retired = payerLog.events[Int(checkpoint.checkpoint.keySequence)]
            let evidence = ForkEvidence(
                .retiredKeySignature(
                    RetiredKeySignature(retiredEvent: retired, rotation: rotation, checkpoint: checkpoint)),
                log: payerLog)
            return evidence.verify().isProven ? .retiredSigner(evidence) : .unknownSigner
        case .unknown, .beforeInForce: return .unknownSigner
        }
    }

    /// Why `evaluate` refuses a validly signed transfer to this wallet with a signed refusal, or nil: the
    /// first check it fails, then `peerFailure`, then a credit the balance cannot take. A payee whose signed
    /// refusal was lost (a crash between the refused entry's commit and the refusal's) signs it again from
    /// this: nothing but the payee's own records can have seen the lost one.
    public static func refusalReason(
        _ transfer: SignedTransfer, walletID: WalletID, policy: TransferPolicy, peerFailure: RefusalReason?,
        state: LedgerState
    ) -> RefusalReason? {
        failure(of: transfer.payload, walletID: walletID, policy: policy) ?? peerFailure
            ?? (state.isIssuer || state.canCredit(transfer.payload.order.amount) ? nil : .balanceOverflow)
    }

    /// The first check a validly signed transfer to this wallet fails, or nil.
    static func failure(of transfer: Transfer, walletID: WalletID, policy: TransferPolicy) -> RefusalReason? {
        let order = transfer.order
        let checkpoint = transfer.checkpoint.checkpoint
        guard checkpoint.walletID == order.payerWalletID, transfer.checkpoint.isValid(signedBy: order.payerKey) else {
            return .checkpointInvalid
        }
        guard let leaf = try? LedgerEntry.decode(transfer.debitLeaf), isDebit(leaf, of: order) else {
            return .debitMismatch
        }
        guard leaf.position == checkpoint.size - 1, leaf.link == checkpoint.head,
            Merkle.verifyInclusion(
                leafHash: Merkle.leafHash(transfer.debitLeaf), index: leaf.position, size: checkpoint.size,
                proof: transfer.inclusionProof, root: checkpoint.root)
        else { return .inclusionProofInvalid }
        if case .spatialProof(let digest) = order.proximity, let verified = policy.verifiedSpatialProof,
            verified != digest
        {
            return .spatialProofMismatch
        }
        return nil
    }

    /// Whether `leaf` is the payer's debit for exactly `order`.
    static func isDebit(_ leaf: LedgerEntry, of order: TransferOrder) -> Bool {
        leaf.kind == .paymentOut && leaf.amount == order.amount && leaf.statement == order.debitReference
            && leaf.counterparty == order.payeeWalletID.bytes && leaf.payload == order.encoded
            && leaf.flags.contains(.withoutProximity) == (order.proximity == .none)
    }
}

extension ByteWriter {
    /// u8 count ≤ 65, then 32-byte hashes.
    mutating func write(proof: [Digest32]) {
        precondition(proof.count <= Merkle.proofHashCountMax)
        write(UInt8(proof.count))
        for hash in proof { write(hash) }
    }
}

extension ByteReader {
    /// Reads what `write(proof:)` writes.
    mutating func readProof() throws -> [Digest32]? {
        guard let count = readUInt8() else { return nil }
        guard Int(count) <= Merkle.proofHashCountMax else {
            throw FormatError(.fieldTooLong, "a proof of \(count) hashes is longer than any tree needs")
        }
        var proof: [Digest32] = []
        for _ in 0..<count {
            guard let hash = read(Digest32.self) else { return nil }
            proof.append(hash)
        }
        return proof
    }
}
