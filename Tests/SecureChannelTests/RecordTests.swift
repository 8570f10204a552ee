import SecureCrypto
import Testing

@testable import SecureChannel

@Suite("Records")
struct RecordTests {
    static func session(_ seed: UInt8 = 1) throws -> HonestRun {
        var (initiator, responder) = fixedPair(seed)
        return try drive(&initiator, &responder)
    }

    @Test func tamperedRecordsAreRefused() throws {
        let run = try Self.session()
        var sealer = run.initiator!.makeSealer()
        let record = try sealer.seal(ChannelRecord(type: 5, payload: Array("pay 4.50 EUR".utf8)))
        for position in record.indices {
            for bit in [UInt8(0x01), 0x80] {
                var altered = record
                altered[position] ^= bit
                var opener = run.responder!.makeOpener()
                #expect(throws: ChannelError.self, "byte \(position) bit \(bit)") { _ = try opener.open(altered) }
            }
        }
        var opener = run.responder!.makeOpener()
        #expect(try opener.open(record).payload == Array("pay 4.50 EUR".utf8))
    }

    @Test func everyTruncationIsRefused() throws {
        let run = try Self.session()
        var sealer = run.initiator!.makeSealer()
        let record = try sealer.seal(ChannelRecord(type: 5, payload: [UInt8](repeating: 7, count: 40)))
        for length in 0..<record.count {
            let prefix = Array(record[0..<length])
            if length < RecordMessage.headerByteCount + AES256GCM.tagByteCount {
                #expect(try RecordMessage.decode(prefix) == nil, "cut to \(length)")
            }
            var opener = run.responder!.makeOpener()
            #expect(throws: ChannelError.self, "cut to \(length)") { _ = try opener.open(prefix) }
        }
    }

    @Test func replayedAndReorderedRecordsAreRefused() throws {
        let run = try Self.session()
        var sealer = run.initiator!.makeSealer()
        let first = try sealer.seal(ChannelRecord(type: 1, payload: [1]))
        let second = try sealer.seal(ChannelRecord(type: 1, payload: [2]))
        var opener = run.responder!.makeOpener()
        _ = try opener.open(first)
        #expect(errorCode { _ = try opener.open(first) } == .recordOutOfOrder)
        var reordered = run.responder!.makeOpener()
        #expect(errorCode { _ = try reordered.open(second) } == .recordOutOfOrder)
        // A replayed record with its counter rewritten to the expected one fails authentication.
        var rewritten = first
        rewritten[9] = 1
        #expect(errorCode { _ = try opener.open(rewritten) } == .recordAuthenticationFailed)
        #expect(try opener.open(second).payload == [2])
    }

    @Test func crossDirectionAndCrossSessionRecordsAreRefused() throws {
        let run = try Self.session(), other = try Self.session(2)
        var sealer = run.initiator!.makeSealer()
        let record = try sealer.seal(ChannelRecord(type: 1, payload: [1, 2, 3]))
        var reflected = run.initiator!.makeOpener()
        #expect(errorCode { _ = try reflected.open(record) } == .recordAuthenticationFailed, "reflected to its sender")
        var foreign = other.responder!.makeOpener()
        #expect(errorCode { _ = try foreign.open(record) } == .recordAuthenticationFailed, "another session")
        // A record type changed in transit is refused: the type is in the associated data.
        var retyped = record
        retyped[1] = 2
        var opener = run.responder!.makeOpener()
        #expect(errorCode { _ = try opener.open(retyped) } == .recordAuthenticationFailed)
    }

    @Test func limitsAndCloseRecords() throws {
        let run = try Self.session()
        var sealer = run.initiator!.makeSealer()
        #expect(
            errorCode {
                _ = try sealer.seal(
                    ChannelRecord(
                        type: 1, payload: [UInt8](repeating: 0, count: ChannelLimits.recordPayloadByteCountMax + 1)))
            } == .tooLarge)
        let largest = try sealer.seal(
            ChannelRecord(type: 1, payload: [UInt8](repeating: 0, count: ChannelLimits.recordPayloadByteCountMax)))
        #expect(largest.count <= ChannelLimits.frameByteCountMax)
        #expect(errorCode { _ = try RecordMessage.decode(largest + [0]) } == .tooLarge)
        var opener = run.responder!.makeOpener()
        _ = try opener.open(largest)
        let closeWithPayload = try sealer.seal(ChannelRecord(type: ChannelRecord.closeType, payload: [1]))
        #expect(errorCode { _ = try opener.open(closeWithPayload) } == .malformed)
    }

    @Test func framesDecodeOnlyWhenWhole() throws {
        let bodies: [[UInt8]] = [
            [1], [UInt8](repeating: 9, count: 300), [UInt8](repeating: 3, count: ChannelLimits.frameByteCountMax),
        ]
        var stream: [UInt8] = []
        for body in bodies {
            let frame = Frame.encode(body)
            for length in 0..<frame.count { #expect(try Frame.decode(frame[0..<length]) == nil, "cut to \(length)") }
            #expect(try Frame.decode(frame[...])?.body == body)
            stream += frame
        }
        // Byte by byte, reading no more than the decoder asks for, gives the same frames.
        var decoder = FrameDecoder(), out: [[UInt8]] = [], offset = 0
        while offset < stream.count {
            let take = min(decoder.wantedByteCount, stream.count - offset, 7)
            #expect(take > 0)
            decoder.append(stream[offset..<(offset + take)])
            offset += take
            while let body = try decoder.next() { out.append(body) }
            #expect(decoder.pendingByteCount <= Frame.headerByteCount + ChannelLimits.frameByteCountMax)
        }
        #expect(out == bodies)
        #expect(errorCode { _ = try Frame.decode([0, 0, 0, 0][...]) } == .malformed)
        var tooLong = ByteWriter()
        tooLong.write(UInt32(ChannelLimits.frameByteCountMax + 1))
        #expect(errorCode { _ = try Frame.decode(tooLong.bytes[...]) } == .tooLarge, "refused from the header alone")
    }
}
