import Foundation

/// Carries whole frame bodies between two ends. Implementations are safe to use from two threads, one
/// sending and one receiving.
public protocol FrameTransport: AnyObject, Sendable {
    /// Sends one frame body, waiting up to `timeoutSeconds` while the peer is not reading (backpressure).
    /// Throws `.timeout`, `.closed` or `.transport`.
    func send(_ body: [UInt8], timeoutSeconds: Double) throws
    /// The next frame body, or nil when the peer closed its end. Throws `.timeout` when nothing whole
    /// arrives in time, and `.malformed`/`.tooLarge` on a bad frame length.
    func receive(timeoutSeconds: Double) throws -> [UInt8]?
    /// Closes both directions; a blocked send or receive on another thread returns.
    func close()
}

/// A point in time on the monotonic clock, for deadlines that do not jump with the wall clock.
struct Deadline {
    let uptimeNanoseconds: UInt64

    init(secondsFromNow seconds: Double) {
        let clamped = max(0, min(seconds, 1e6))
        uptimeNanoseconds = DispatchTime.now().uptimeNanoseconds + UInt64(clamped * 1e9)
    }

    /// Seconds left, never negative.
    var remainingSeconds: Double {
        let now = DispatchTime.now().uptimeNanoseconds
        return now >= uptimeNanoseconds ? 0 : Double(uptimeNanoseconds - now) / 1e9
    }

    var date: Date { Date(timeIntervalSinceNow: remainingSeconds) }
}
