import SecureChannel

/// libFuzzer entry: the frame decoder, whole and streamed in pieces. It must never trap, never hand out a
/// frame over the limit, and give the same frames whichever way the bytes arrive.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var whole: [[UInt8]] = []
    var offset = 0
    while let (body, consumed) = try? Frame.decode(bytes[offset...]) {
        precondition(!body.isEmpty && body.count <= ChannelLimits.frameByteCountMax)
        whole.append(body)
        offset += consumed
    }
    // Streamed in pieces whose sizes come from the input itself.
    var decoder = FrameDecoder(), streamed: [[UInt8]] = [], position = 0, step = 0
    streaming: while position < bytes.count {
        let take = min(max(decoder.wantedByteCount, 1), Int(bytes[step % bytes.count]) % 64 + 1, bytes.count - position)
        decoder.append(bytes[position..<(position + take)])
        position += take
        step += 1
        while true {
            let next: [UInt8]?
            do { next = try decoder.next() } catch { break streaming }
            guard let body = next else { break }
            streamed.append(body)
        }
        precondition(decoder.pendingByteCount <= Frame.headerByteCount + ChannelLimits.frameByteCountMax)
    }
    precondition(streamed == Array(whole.prefix(streamed.count)))
    return 0
}
