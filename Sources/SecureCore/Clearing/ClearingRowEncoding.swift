import SecureCrypto

// The stored encodings of the clearing's rows (docs/CLEARING.md §3.2): PostgreSQL keeps each record's keys and
// amounts as columns and the whole record in an `encoded` bytea, from which it is read back exactly. Storage
// formats of this package only (the store writes and reads them), never sent to a wallet: `package`, not public.
// Each is version u8 (1) ‖ fields in declaration order; a record decodes only when it fills the bytes exactly.

/// The bound of one stored signed statement, checkpoint or entry inside a row.
private let rowPartByteCountMax = 67_108_864

private func rowBytes(_ body: (inout ByteWriter) -> Void) -> [UInt8] {
    var writer = ByteWriter()
    writer.write(UInt8(1))
    body(&writer)
    return writer.bytes
}

private func readRow<T>(_ bytes: [UInt8], _ what: String, _ body: (inout ByteReader) throws -> T?) throws -> T {
    var reader = ByteReader(bytes)
    guard try reader.readVersion(1, of: what), let value = try body(&reader) else {
        throw FormatError(.invalidValue, "a stored \(what) is truncated")
    }
    try reader.expectEnd(what)
    return value
}

extension ByteWriter {
    fileprivate mutating func write(key: TransferKey) {
        write(key.payer)
        write(key.transferID)
    }

    fileprivate mutating func write(part: [UInt8]) { write(prefixed32: part, max: rowPartByteCountMax) }
}

extension ByteReader {
    fileprivate mutating func readKey() -> TransferKey? {
        guard let payer = read(WalletID.self), let id = read(TransferID.self) else { return nil }
        return TransferKey(payer: payer, transferID: id)
    }

    fileprivate mutating func readPart() throws -> [UInt8]? {
        try readPrefixed32(max: rowPartByteCountMax, field: "stored part")
    }

    fileprivate mutating func readBool() throws -> Bool? {
        guard let byte = readUInt8() else { return nil }
        guard byte <= 1 else { throw FormatError(.invalidValue, "a stored flag of \(byte)") }
        return byte == 1
    }
}

private func required<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw FormatError(.invalidValue, "a stored \(what) is truncated") }
    return value
}

extension DebitRecord {
    /// The stored row: key ‖ payee ‖ amount ‖ position ‖ signed transfer.
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(key: key)
            writer.write(payee)
            amount.encode(into: &writer)
            writer.write(position)
            writer.write(part: transfer.encoded)
        }
    }

    /// Reads a stored row back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> DebitRecord {
        try readRow(bytes, "debit") { reader in
            guard let key = reader.readKey(), let payee = reader.read(WalletID.self),
                let amount = try AssetAmount.decode(from: &reader), let position = reader.readUInt64(),
                let transfer = try reader.readPart()
            else { return nil }
            return DebitRecord(
                key: key, payee: payee, amount: amount, position: position,
                transfer: try required(try SignedTransfer.decode(transfer), "transfer"))
        }
    }
}

extension CreditRecord {
    /// The stored row: key ‖ payee ‖ amount ‖ transfer digest ‖ position ‖ payer checkpoint ‖ redemption flag.
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(key: key)
            writer.write(payee)
            amount.encode(into: &writer)
            writer.write(transferDigest)
            writer.write(position)
            writer.write(part: payerCheckpoint.encoded)
            writer.write(UInt8(isRedemption ? 1 : 0))
        }
    }

    /// Reads a stored row back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> CreditRecord {
        try readRow(bytes, "credit") { reader in
            guard let key = reader.readKey(), let payee = reader.read(WalletID.self),
                let amount = try AssetAmount.decode(from: &reader), let digest = reader.read(Digest32.self),
                let position = reader.readUInt64(), let checkpoint = try reader.readPart(),
                let redemption = try reader.readBool()
            else { return nil }
            return CreditRecord(
                key: key, payee: payee, amount: amount, transferDigest: digest, position: position,
                payerCheckpoint: try required(try SignedCheckpoint.decode(checkpoint), "checkpoint"),
                isRedemption: redemption)
        }
    }
}

extension ReversalRecord {
    /// The stored row: key ‖ payee ‖ amount ‖ position ‖ signed refusal.
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(key: key)
            writer.write(payee)
            amount.encode(into: &writer)
            writer.write(position)
            writer.write(part: refusal.encoded)
        }
    }

    /// Reads a stored row back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> ReversalRecord {
        try readRow(bytes, "reversal") { reader in
            guard let key = reader.readKey(), let payee = reader.read(WalletID.self),
                let amount = try AssetAmount.decode(from: &reader), let position = reader.readUInt64(),
                let refusal = try reader.readPart()
            else { return nil }
            return ReversalRecord(
                key: key, payee: payee, amount: amount, position: position,
                refusal: try required(try SignedRefusal.decode(refusal), "refusal"))
        }
    }
}

extension ConfirmationRecord {
    /// The stored row: key ‖ payee ‖ receipt digest ‖ position.
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(key: key)
            writer.write(payee)
            writer.write(receiptDigest)
            writer.write(position)
        }
    }

    /// Reads a stored row back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> ConfirmationRecord {
        try readRow(bytes, "confirmation") { reader in
            guard let key = reader.readKey(), let payee = reader.read(WalletID.self),
                let digest = reader.read(Digest32.self), let position = reader.readUInt64()
            else { return nil }
            return ConfirmationRecord(key: key, payee: payee, receiptDigest: digest, position: position)
        }
    }
}

extension VoucherRecord {
    /// The stored row: issuer ‖ voucher id ‖ recipient ‖ amount ‖ voucher digest ‖ position.
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(key.issuer)
            writer.write(key.voucherID)
            writer.write(recipient)
            amount.encode(into: &writer)
            writer.write(voucherDigest)
            writer.write(position)
        }
    }

    /// Reads a stored row back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> VoucherRecord {
        try readRow(bytes, "voucher") { reader in
            guard let issuer = reader.read(WalletID.self), let id = reader.read(VoucherID.self),
                let recipient = reader.read(WalletID.self), let amount = try AssetAmount.decode(from: &reader),
                let digest = reader.read(Digest32.self), let position = reader.readUInt64()
            else { return nil }
            return VoucherRecord(
                key: VoucherKey(issuer: issuer, voucherID: id), recipient: recipient, amount: amount,
                voucherDigest: digest, position: position)
        }
    }
}

extension HeldCheckpointSource {
    /// The stored source: 0 (cosigned), or 1 ‖ payee ‖ transfer id (a credit's).
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            switch self {
            case .cosigned: writer.write(UInt8(0))
            case .credit(let payee, let transferID):
                writer.write(UInt8(1))
                writer.write(payee)
                writer.write(transferID)
            }
        }
    }

    /// Reads a stored source back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> HeldCheckpointSource {
        try readRow(bytes, "checkpoint source") { reader in
            switch reader.readUInt8() {
            case 0: return .cosigned
            case 1:
                guard let payee = reader.read(WalletID.self), let id = reader.read(TransferID.self) else { return nil }
                return .credit(payee: payee, transferID: id)
            default: return nil
            }
        }
    }
}

extension InconsistencyRecord {
    /// The stored row: wallet ‖ kind ‖ key ‖ u8 count ‖ parts.
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(wallet)
            writer.write(kind.rawValue)
            writer.write(key: key)
            writer.write(UInt8(parts.count))
            for part in parts { writer.write(part) }
        }
    }

    /// Reads a stored row back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> InconsistencyRecord {
        try readRow(bytes, "inconsistency") { reader in
            guard let wallet = reader.read(WalletID.self), let kindByte = reader.readUInt8(),
                let key = reader.readKey(), let count = reader.readUInt8()
            else { return nil }
            guard let kind = InconsistencyKind(rawValue: kindByte) else {
                throw FormatError(.invalidValue, "inconsistency kind \(kindByte)")
            }
            var parts: [Digest32] = []
            for _ in 0..<count {
                guard let part = reader.read(Digest32.self) else { return nil }
                parts.append(part)
            }
            return InconsistencyRecord(wallet: wallet, kind: kind, key: key, parts: parts)
        }
    }
}

extension SyncEntry {
    /// The stored entry of a wallet's sync history: position u64 ‖ the upload's entry encoding (whole with its
    /// transfer, or opaque).
    package var rowEncoded: [UInt8] {
        rowBytes { writer in
            writer.write(position)
            encode(into: &writer)
        }
    }

    /// Reads a stored entry back.
    package static func decodeRow(_ bytes: [UInt8]) throws -> SyncEntry {
        try readRow(bytes, "sync entry") { reader in
            guard let position = reader.readUInt64() else { return nil }
            return try SyncEntry.decode(position: position, from: &reader)
        }
    }
}

extension KeyEventLog {
    /// The stored log: its events from the inception, as the wallet card carries them.
    package var rowEncoded: [UInt8] { rowBytes { encode(into: &$0) } }

    /// Reads a stored log back, verifying it again from its inception.
    package static func decodeRow(_ bytes: [UInt8]) throws -> KeyEventLog {
        try readRow(bytes, "key-event log") { try KeyEventLog.decode(from: &$0) }
    }
}
