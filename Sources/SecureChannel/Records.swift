import SecureCrypto

/// Which way a record travels; part of the nonce and the associated data.
public enum RecordDirection: UInt8, Sendable {
    /// Initiator to responder.
    case initiatorToResponder = 0x01
    /// Responder to initiator.
    case responderToInitiator = 0x02

    init(sender: ChannelRole) { self = sender == .initiator ? .initiatorToResponder : .responderToInitiator }
}

/// One application message as the peer protocol sees it.
public struct ChannelRecord: Equatable, Sendable {
    /// The application's message type, 1...255; 0 is the channel's own close record.
    public let type: UInt8
    /// The plaintext payload.
    public let payload: [UInt8]

    /// Makes a record.
    public init(type: UInt8, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// The record type reserved for a clean close (empty payload).
    public static let closeType: UInt8 = 0
}

/// A sealed record on the wire: 0x17 ‖ type(1) ‖ counter(8, big-endian) ‖ AES-256-GCM ciphertext ‖ tag(16).
public struct RecordMessage: Equatable, Sendable {
    /// Bytes before the ciphertext.
    public static let headerByteCount = 1 + 1 + 8

    /// The record type (in clear, authenticated).
    public let type: UInt8
    /// The sender's counter for this record (in clear, authenticated).
    public let counter: UInt64
    /// Ciphertext ‖ tag.
    public let sealed: [UInt8]

    /// The wire encoding.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 10 + sealed.count)
        writer.write(MessageKind.record.rawValue)
        writer.write(type)
        writer.write(counter)
        writer.write(raw: sealed)
        return writer.bytes
    }

    /// Decodes one whole frame body. Returns nil when shorter than a header and a tag; throws on another
    /// kind of message or a ciphertext over the limit.
    public static func decode(_ bytes: [UInt8]) throws -> RecordMessage? {
        var reader = ByteReader(bytes)
        guard let kind = reader.readUInt8() else { return nil }
        guard kind == MessageKind.record.rawValue else {
            if MessageKind(rawValue: kind) != nil {
                throw ChannelError(.unexpectedMessage, "a handshake message arrived after the handshake finished")
            }
            throw ChannelError(.malformed, String(format: "unknown message kind 0x%02x", kind))
        }
        guard let type = reader.readUInt8(), let counter = reader.readUInt64() else { return nil }
        guard reader.remainingCount >= AES256GCM.tagByteCount else { return nil }
        guard reader.remainingCount <= ChannelLimits.recordPayloadByteCountMax + AES256GCM.tagByteCount else {
            throw ChannelError(
                .tooLarge,
                "a record of \(reader.remainingCount) sealed bytes is over the \(ChannelLimits.recordPayloadByteCountMax)-byte payload limit"
            )
        }
        return RecordMessage(type: type, counter: counter, sealed: reader.readRest())
    }
}

private let recordLabel = DomainLabel.bytes("secure-channel-record-v1")

/// One direction's record protection, which sealing and opening share: the key, the session and the direction.
private struct RecordProtection: Sendable {
    let key: SecretBytes
    let sessionId: [UInt8]
    let direction: RecordDirection

    /// "secure-channel-record-v1" ‖ 0x00 ‖ session id(16) ‖ direction(1) ‖ type(1) ‖ counter(8).
    func associatedData(type: UInt8, counter: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: recordLabel.count + sessionId.count + 10)
        writer.write(raw: recordLabel)
        writer.write(raw: sessionId)
        writer.write(direction.rawValue)
        writer.write(type)
        writer.write(counter)
        return writer.bytes
    }

    /// direction(1) ‖ 0x000000 ‖ counter(8). The key is per direction already; the direction byte makes a
    /// nonce collision across directions impossible even if the keys were ever equal.
    func nonce(counter: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: 12)
        writer.write(raw: [direction.rawValue, 0, 0, 0])
        writer.write(counter)
        return writer.bytes
    }

    func seal(_ payload: [UInt8], type: UInt8, counter: UInt64) throws -> [UInt8] {
        try AES256GCM.seal(
            payload, key: key, nonce: nonce(counter: counter),
            associatedData: associatedData(type: type, counter: counter))
    }

    func open(_ sealed: [UInt8], type: UInt8, counter: UInt64) throws -> [UInt8] {
        try AES256GCM.open(
            sealed, key: key, nonce: nonce(counter: counter),
            associatedData: associatedData(type: type, counter: counter))
    }
}

/// Seals our records, numbering them from 0. A pure value: the driver holds it under its send lock.
public struct RecordSealer: Sendable {
    private let protection: RecordProtection
    private var nextCounter: UInt64 = 0

    init(key: SecretBytes, sessionId: [UInt8], direction: RecordDirection) {
        protection = RecordProtection(key: key, sessionId: sessionId, direction: direction)
    }

    /// Seals one record; throws `.tooLarge` for a payload over the limit or when the session has used up
    /// its record count.
    public mutating func seal(_ record: ChannelRecord) throws -> [UInt8] {
        guard record.payload.count <= ChannelLimits.recordPayloadByteCountMax else {
            throw ChannelError(
                .tooLarge,
                "a payload of \(record.payload.count) bytes is over the \(ChannelLimits.recordPayloadByteCountMax)-byte record limit"
            )
        }
        guard nextCounter < ChannelLimits.recordCountMax else {
            throw ChannelError(
                .tooLarge, "this session has sealed its \(ChannelLimits.recordCountMax) records; start a new session")
        }
        let counter = nextCounter
        let sealed = try protection.seal(record.payload, type: record.type, counter: counter)
        nextCounter += 1
        return RecordMessage(type: record.type, counter: counter, sealed: sealed).encoded
    }
}

/// Opens the peer's records, which must arrive exactly in order. A pure value, held under the receive lock.
public struct RecordOpener: Sendable {
    private let protection: RecordProtection
    private var nextCounter: UInt64 = 0

    init(key: SecretBytes, sessionId: [UInt8], direction: RecordDirection) {
        protection = RecordProtection(key: key, sessionId: sessionId, direction: direction)
    }

    /// Opens one frame body. Throws `.recordOutOfOrder` for a replayed, skipped or reordered counter and
    /// `.recordAuthenticationFailed` for a record that was altered, sealed for the other direction or
    /// sealed in another session.
    public mutating func open(_ frame: [UInt8]) throws -> ChannelRecord {
        guard let message = try RecordMessage.decode(frame) else {
            throw ChannelError(.truncated, "a record of \(frame.count) bytes is cut short")
        }
        guard message.counter == nextCounter else {
            let what =
                message.counter < nextCounter
                ? "a replayed record" : "a record out of order (one is missing or delayed)"
            throw ChannelError(.recordOutOfOrder, "\(what): counter \(message.counter), expected \(nextCounter)")
        }
        let payload: [UInt8]
        do {
            payload = try protection.open(message.sealed, type: message.type, counter: message.counter)
        } catch {
            throw ChannelError(
                .recordAuthenticationFailed,
                "a record failed authentication: altered, or sealed for another direction or session")
        }
        guard message.type != ChannelRecord.closeType || payload.isEmpty else {
            throw ChannelError(.malformed, "a close record carries \(payload.count) bytes; it must be empty")
        }
        nextCounter += 1
        return ChannelRecord(type: message.type, payload: payload)
    }
}
