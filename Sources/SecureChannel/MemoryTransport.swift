import Foundation

/// Two connected in-memory ends for deterministic tests and simulations. Each direction is a bounded FIFO;
/// a fault hook sees every frame sent and decides, from the frame's direction and index alone, whether to
/// deliver it, drop it, duplicate it, hold it back behind later frames, or replace it. Decisions never
/// depend on thread timing, so a run with the same hook and the same messages behaves the same.
public final class MemoryLink: @unchecked Sendable {
    /// Which way a frame goes.
    public enum Direction: Sendable, Equatable {
        /// From the `initiatorEnd` to the `responderEnd`.
        case initiatorToResponder
        /// The other way.
        case responderToInitiator
    }

    /// What to do with one frame.
    public enum Fault: Sendable, Equatable {
        /// Deliver it.
        case deliver
        /// Lose it.
        case drop
        /// Deliver it twice in a row.
        case duplicate
        /// Hold it until `frames` later frames in the same direction have been delivered, then deliver it:
        /// `delay(frames: 1)` swaps it with the next one. Held frames are delivered when the sender closes.
        case delay(frames: Int)
        /// Deliver these bytes instead (tampering, injection, truncation).
        case replace([UInt8])
    }

    /// Decides each frame's fate: (direction, index of the frame in that direction from 0, body).
    public typealias FaultHook = @Sendable (Direction, Int, [UInt8]) -> Fault

    /// The end the initiator uses.
    public let initiatorEnd: MemoryTransport
    /// The end the responder uses.
    public let responderEnd: MemoryTransport

    /// A link whose frames all pass unless `hook` says otherwise.
    public init(hook: FaultHook? = nil) {
        let forward = MemoryPipe(direction: .initiatorToResponder, hook: hook)
        let backward = MemoryPipe(direction: .responderToInitiator, hook: hook)
        initiatorEnd = MemoryTransport(outgoing: forward, incoming: backward)
        responderEnd = MemoryTransport(outgoing: backward, incoming: forward)
    }

    /// The first frames sent in a direction (up to `ChannelLimits.memoryLogFrameCountMax`), as the sender
    /// gave them before any fault, for tests that replay or inspect a handshake and its first records.
    public func sentFrames(_ direction: Direction) -> [[UInt8]] {
        (direction == .initiatorToResponder ? initiatorEnd.outgoing : responderEnd.outgoing).sentLog()
    }
}

/// One direction of a `MemoryLink`.
final class MemoryPipe: @unchecked Sendable {
    private let condition = NSCondition()
    private let direction: MemoryLink.Direction
    private let hook: MemoryLink.FaultHook?
    private var queue: [[UInt8]] = []
    private var held: [(remaining: Int, body: [UInt8])] = []
    private var sent: [[UInt8]] = []
    private var sentCount = 0
    private var closed = false

    init(direction: MemoryLink.Direction, hook: MemoryLink.FaultHook?) {
        self.direction = direction
        self.hook = hook
    }

    func sentLog() -> [[UInt8]] { condition.withLock { sent } }

    func send(_ body: [UInt8], timeoutSeconds: Double) throws {
        let deadline = Deadline(secondsFromNow: timeoutSeconds)
        condition.lock()
        defer { condition.unlock() }
        while !closed && queue.count >= ChannelLimits.memoryQueueFrameCountMax {
            guard condition.wait(until: deadline.date) || deadline.remainingSeconds > 0 else {
                throw ChannelError(.timeout, "the peer did not read for \(timeoutSeconds) s; its queue is full")
            }
        }
        guard !closed else { throw ChannelError(.closed, "the in-memory link is closed") }
        let index = sentCount
        sentCount += 1
        if sent.count < ChannelLimits.memoryLogFrameCountMax { sent.append(body) }
        switch hook?(direction, index, body) ?? .deliver {
        case .deliver: deliver(body)
        case .drop: break
        case .duplicate: deliver(body); deliver(body)
        case .delay(let frames): held.append((max(frames, 0), body)); releaseHeld(afterDelivering: false)
        case .replace(let bytes): deliver(bytes)
        }
        condition.broadcast()
    }

    /// Appends to the queue and counts the frame against everything held back.
    private func deliver(_ body: [UInt8]) {
        queue.append(body)
        releaseHeld(afterDelivering: true)
    }

    private func releaseHeld(afterDelivering: Bool) {
        if afterDelivering { for index in held.indices { held[index].remaining -= 1 } }
        while let first = held.firstIndex(where: { $0.remaining <= 0 }) {
            let body = held.remove(at: first).body
            queue.append(body)
        }
    }

    func receive(timeoutSeconds: Double) throws -> [UInt8]? {
        let deadline = Deadline(secondsFromNow: timeoutSeconds)
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty {
            if closed { return nil }
            guard condition.wait(until: deadline.date) || deadline.remainingSeconds > 0 else {
                throw ChannelError(.timeout, "no frame arrived within \(timeoutSeconds) s")
            }
        }
        let body = queue.removeFirst()
        condition.broadcast()
        return body
    }

    /// Closes the direction: frames already queued (and any still held back) can still be read, then
    /// the reader sees the end.
    func close() {
        condition.withLock {
            guard !closed else { return }
            closed = true
            queue += held.map(\.body)
            held.removeAll()
            condition.broadcast()
        }
    }
}

/// One end of a `MemoryLink`.
public final class MemoryTransport: FrameTransport, @unchecked Sendable {
    let outgoing: MemoryPipe
    let incoming: MemoryPipe

    init(outgoing: MemoryPipe, incoming: MemoryPipe) {
        self.outgoing = outgoing
        self.incoming = incoming
    }

    public func send(_ body: [UInt8], timeoutSeconds: Double) throws {
        guard body.count <= ChannelLimits.frameByteCountMax else {
            throw ChannelError(
                .tooLarge, "a frame of \(body.count) bytes is over the \(ChannelLimits.frameByteCountMax)-byte limit")
        }
        try outgoing.send(body, timeoutSeconds: timeoutSeconds)
    }

    public func receive(timeoutSeconds: Double) throws -> [UInt8]? {
        try incoming.receive(timeoutSeconds: timeoutSeconds)
    }

    /// Closes our sending direction (the peer reads what is queued, then the end) and our receiving one.
    public func close() {
        outgoing.close()
        incoming.close()
    }
}
