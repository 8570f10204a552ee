import SecureCrypto

/// What a transfer, receipt or refusal file holds: the signed statement and its signer's whole key-event
/// log, from the inception. The envelope itself is not signed: the log is self-certifying (its inception
/// hashes to the signer's wallet id) and decides which key may sign for that wallet at the statement's
/// date, so a key carried inside a statement never decides it alone. See docs/PROTOCOL.md, "Envelopes".
public struct Envelope: Hashable, Sendable {
    /// What the envelope carries.
    public enum Kind: UInt8, Sendable, CaseIterable {
        case transfer = 1
        case receipt = 2
        case refusal = 3
        case voucher = 4
    }

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// A signed statement is at most a transfer (`Transfer.encodedByteCountMax`) plus its signature.
    public static let statementByteCountMax = Transfer.encodedByteCountMax + 128
    /// The kind of statement.
    public let kind: Kind
    /// The signed statement's own encoding, unchanged.
    public let statement: [UInt8]
    /// The signer's key-event log, verified when the envelope is decoded or made.
    public let signerLog: KeyEventLog
    /// For a transfer: consistency proofs to the transfer's checkpoint from the checkpoints of the payer's
    /// last confirmed payment to this payee and of each unconfirmed one after it (none when it never paid
    /// this payee). Always empty in a receipt or a refusal.
    public let consistency: [ConsistencyClaim]

    /// An envelope of `statement` signed by the wallet whose log is `signerLog`.
    public init(kind: Kind, statement: [UInt8], signerLog: KeyEventLog, consistency: [ConsistencyClaim] = []) {
        precondition(statement.count <= Self.statementByteCountMax, "a statement over its limit")
        precondition(consistency.isEmpty || kind == .transfer, "only a transfer carries consistency proofs")
        precondition(consistency.count <= ConsistencyClaim.countMax, "more consistency claims than the limit")
        self.kind = kind
        self.statement = statement
        self.signerLog = signerLog
        self.consistency = consistency
    }

    /// An envelope of a transfer, made by the payer whose log is `payerLog`, with the proof that its
    /// checkpoint extends the last one this payer sent the same payee.
    public init(_ transfer: SignedTransfer, payerLog: KeyEventLog, consistency: [ConsistencyClaim] = []) {
        self.init(kind: .transfer, statement: transfer.encoded, signerLog: payerLog, consistency: consistency)
    }

    /// An envelope of a receipt, made by the payee whose log is `payeeLog`.
    public init(_ receipt: SignedReceipt, payeeLog: KeyEventLog) {
        self.init(kind: .receipt, statement: receipt.encoded, signerLog: payeeLog)
    }

    /// An envelope of a refusal, made by the payee whose log is `payeeLog`.
    public init(_ refusal: SignedRefusal, payeeLog: KeyEventLog) {
        self.init(kind: .refusal, statement: refusal.encoded, signerLog: payeeLog)
    }

    /// An envelope of a voucher, made by the issuer whose log is `issuerLog`.
    public init(_ voucher: SignedVoucher, issuerLog: KeyEventLog) {
        self.init(kind: .voucher, statement: voucher.encoded, signerLog: issuerLog)
    }

    /// version ‖ kind ‖ u32 length ‖ statement ‖ key-event log (`KeyEventLog.encode`) ‖ u8 claim count ‖
    /// each claim (from size u64 ‖ root 32 ‖ proof).
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: statement.count + 256 * signerLog.events.count + 16)
        writer.write(Self.encodingVersion)
        writer.write(kind.rawValue)
        writer.write(prefixed32: statement, max: Self.statementByteCountMax)
        signerLog.encode(into: &writer)
        writer.write(UInt8(consistency.count))
        for claim in consistency { claim.encode(into: &writer) }
        return writer.bytes
    }

    /// Decodes an envelope and verifies the log from its inception; nil when the bytes end early.
    public static func decode(_ bytes: [UInt8]) throws -> Envelope? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "envelope") else { return nil }
        guard let kindByte = reader.readUInt8(),
            let statement = try reader.readPrefixed32(max: statementByteCountMax, field: "statement"),
            let log = try KeyEventLog.decode(from: &reader), let count = reader.readUInt8()
        else { return nil }
        guard let kind = Kind(rawValue: kindByte) else {
            throw FormatError(.invalidValue, "envelope kind \(kindByte) is not known")
        }
        guard Int(count) <= (kind == .transfer ? ConsistencyClaim.countMax : 0) else {
            throw FormatError(.fieldTooLong, "\(count) consistency claims in a \(kind) envelope")
        }
        var consistency: [ConsistencyClaim] = []
        for _ in 0..<count {
            guard let claim = try ConsistencyClaim.decode(from: &reader) else { return nil }
            consistency.append(claim)
        }
        try reader.expectEnd("envelope")
        return Envelope(kind: kind, statement: statement, signerLog: log, consistency: consistency)
    }

    /// The transfer inside, with the payer's log; throws unless the envelope holds a transfer whose payer is
    /// the wallet the log belongs to.
    public func transfer() throws -> (SignedTransfer, KeyEventLog) {
        let transfer = try open(.transfer, SignedTransfer.decode)
        try expectSigner(transfer.payload.order.payerWalletID, "payer")
        return (transfer, signerLog)
    }

    /// The receipt inside, with the payee's log.
    public func receipt() throws -> (SignedReceipt, KeyEventLog) {
        let receipt = try open(.receipt, SignedReceipt.decode)
        try expectSigner(receipt.payload.payeeWalletID, "payee")
        return (receipt, signerLog)
    }

    /// The refusal inside, with the payee's log.
    public func refusal() throws -> (SignedRefusal, KeyEventLog) {
        let refusal = try open(.refusal, SignedRefusal.decode)
        try expectSigner(refusal.payload.payeeWalletID, "payee")
        return (refusal, signerLog)
    }

    /// The voucher inside, with the issuer's log.
    public func voucher() throws -> (SignedVoucher, KeyEventLog) {
        let voucher = try open(.voucher, SignedVoucher.decode)
        try expectSigner(voucher.payload.issuerWalletID, "issuer")
        return (voucher, signerLog)
    }

    private func open<Statement>(_ expected: Kind, _ decode: ([UInt8]) throws -> Statement?) throws -> Statement {
        guard kind == expected else {
            throw FormatError(.invalidValue, "the envelope holds a \(kind), not a \(expected)")
        }
        guard let statement = try decode(statement) else {
            throw FormatError(.invalidValue, "the \(kind) inside the envelope is truncated")
        }
        return statement
    }

    private func expectSigner(_ walletID: WalletID, _ role: String) throws {
        guard signerLog.walletID == walletID else {
            throw KeyEventError(
                .wrongWallet,
                "the key-event log in the envelope is wallet \(signerLog.walletID.hex), not the \(role) \(walletID.hex)"
            )
        }
    }
}

/// A wallet card: what another wallet needs to pay or mint to this one, and nothing it must take on
/// trust. It is the wallet id and the key-event log that proves it, armoured as text so that a person can
/// mail it. See docs/PROTOCOL.md, "Wallet cards".
public struct WalletCard: Hashable, Sendable {
    /// The binary card's version byte: 2 (version 1 was a wallet id line beside a PEM key, which nothing
    /// bound together; it is refused).
    public static let encodingVersion: UInt8 = 2
    /// The PEM label of the armoured card.
    public static let armourLabel = "SECURE WALLET CARD"
    /// The wallet's key-event log, verified from its inception.
    public let log: KeyEventLog
    /// The wallet's id: the digest of the log's inception.
    public var walletID: WalletID { log.walletID }

    /// The card of the wallet whose log is `log`.
    public init(log: KeyEventLog) { self.log = log }

    /// version ‖ wallet id ‖ key-event log.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.encodingVersion)
        writer.write(walletID)
        log.encode(into: &writer)
        return writer.bytes
    }

    /// A "Wallet-ID:" line for people, then the armoured card; only the armour is read back.
    public var text: String {
        "Wallet-ID: \(walletID.hex)\n" + PEM.encode(encoded, label: Self.armourLabel)
    }

    /// Decodes a binary card: the log must hash to the wallet id the card names.
    public static func decode(_ bytes: [UInt8]) throws -> WalletCard {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "wallet card"),
            let walletID = reader.read(WalletID.self), let log = try KeyEventLog.decode(from: &reader)
        else { throw FormatError(.invalidValue, "the wallet card is truncated") }
        try reader.expectEnd("wallet card")
        guard log.walletID == walletID else {
            throw FormatError(.invalidValue, "the card's key-event log is not wallet \(walletID.hex)'s")
        }
        return WalletCard(log: log)
    }

    /// Reads an armoured card (the output of `secure wallet show --card`).
    public static func parse(_ text: String) throws -> WalletCard {
        guard text.contains("-----BEGIN \(armourLabel)-----") else {
            throw FormatError(
                .unsupportedVersion,
                "this is not a version 2 wallet card (cards made before key-event logs only named a key, which "
                    + "nothing bound to the wallet id); ask its owner for `secure wallet show --card` again")
        }
        return try decode(try PEM.decode(text, label: armourLabel))
    }
}

extension KeyEventLog {
    /// u16 count ‖ each signed event as u16 length ‖ `SignedKeyEvent.encoded`, from the inception.
    func encode(into writer: inout ByteWriter) {
        writer.write(UInt16(events.count))
        for event in events { writer.write(prefixed16: event.encoded, max: KeyEventsMessage.signedEventByteCountMax) }
    }

    /// A whole log at the reader, verified event by event from its inception; nil when the bytes end early.
    static func decode(from reader: inout ByteReader) throws -> KeyEventLog? {
        guard let count = reader.readUInt16() else { return nil }
        guard count >= 1, Int(count) <= eventCountMax else {
            throw FormatError(.fieldTooLong, "a key-event log of \(count) events; 1 to \(eventCountMax)")
        }
        var events: [SignedKeyEvent] = []
        for _ in 0..<count {
            guard
                let bytes = try reader.readPrefixed16(max: KeyEventsMessage.signedEventByteCountMax, field: "key event")
            else { return nil }
            guard let event = try SignedKeyEvent.decode(bytes) else {
                throw FormatError(.invalidValue, "a key event in the log is truncated")
            }
            events.append(event)
        }
        do {
            return try KeyEventLog(verifying: events)
        } catch let error as KeyEventError {
            // Malformed bytes from outside: the decoder's one error type, with the log's own reason.
            throw FormatError(.invalidValue, "the key-event log does not verify: \(error.message)")
        }
    }
}
