import SecureCrypto

/// Length-prefixed frames for stream transports: length(4, big-endian) ‖ body, 1 ≤ length ≤
/// `ChannelLimits.frameByteCountMax`.
public enum Frame {
    /// Bytes in the length prefix.
    public static let headerByteCount = 4

    /// Prefixes a body with its length. The body comes from our own code, so an oversize one is our bug.
    public static func encode(_ body: [UInt8]) -> [UInt8] {
        precondition(
            !body.isEmpty && body.count <= ChannelLimits.frameByteCountMax,
            "a frame body of 1 to frameByteCountMax bytes")
        var writer = ByteWriter(capacity: headerByteCount + body.count)
        writer.write(prefixed32: body, max: ChannelLimits.frameByteCountMax)
        return writer.bytes
    }

    /// Decodes the first frame of `bytes`: nil when it is not all there yet; throws when the length is 0
    /// or over the limit, before anything is allocated for it. Returns the body and the bytes consumed.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> (body: [UInt8], consumed: Int)? {
        guard bytes.count >= headerByteCount else { return nil }
        let start = bytes.startIndex
        let length =
            Int(bytes[start]) << 24 | Int(bytes[start + 1]) << 16 | Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        guard length >= 1 else { throw ChannelError(.malformed, "an empty frame") }
        guard length <= ChannelLimits.frameByteCountMax else {
            throw ChannelError(
                .tooLarge, "a frame of \(length) bytes is over the \(ChannelLimits.frameByteCountMax)-byte limit")
        }
        guard bytes.count >= headerByteCount + length else { return nil }
        let bodyStart = start + headerByteCount
        return (Array(bytes[bodyStart..<(bodyStart + length)]), headerByteCount + length)
    }
}

/// Collects bytes from a stream and hands out whole frames. It never holds more than one frame and a
/// header of unread input, because the reader asks `wantedByteCount` before each read.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    /// An empty decoder.
    public init() {}

    /// Adds bytes read from the stream.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame body, or nil when more bytes are needed; throws on a bad length.
    public mutating func next() throws -> [UInt8]? {
        guard let (body, consumed) = try Frame.decode(buffer[start...]) else { return nil }
        start += consumed
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > ChannelLimits.frameByteCountMax {
            buffer.removeFirst(start)
            start = 0
        }
        return body
    }

    /// Bytes received and not yet handed out as a frame.
    public var pendingByteCount: Int { buffer.count - start }

    /// How many more bytes a reader may take without buffering beyond the frame in progress: the rest of
    /// that frame, or of its header. Reading no more than this is what gives TCP its backpressure.
    public var wantedByteCount: Int {
        let pending = buffer.count - start
        guard pending >= Frame.headerByteCount else { return Frame.headerByteCount - pending }
        let slice = buffer[start...]
        let s = slice.startIndex
        let length = Int(slice[s]) << 24 | Int(slice[s + 1]) << 16 | Int(slice[s + 2]) << 8 | Int(slice[s + 3])
        return max(Frame.headerByteCount + min(length, ChannelLimits.frameByteCountMax) - pending, 0)
    }
}
