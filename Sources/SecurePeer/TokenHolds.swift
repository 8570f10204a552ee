import Foundation
import SecureToken

/// The sessions of this process that hold each wallet token unlocked. One process may run several
/// sessions on one wallet at once (`secure receive --count N`); each session that approved holds the
/// token until its end (or its PIN's 60 seconds), and the token is locked when the last holder lets go.
/// Before this, the first session to end locked the token under the others' feet: their next signature
/// failed, before the debit (nothing moved) or between the credit and the receipt (the payment stayed
/// unconfirmed until `secure retry`).
final class TokenHolds: @unchecked Sendable {
    static let shared = TokenHolds()
    private let mutex = NSLock()
    private var counts: [ObjectIdentifier: Int] = [:]

    /// Counts one more holder; the token is not locked while the count is above zero.
    func acquire(_ token: WalletToken) {
        mutex.withLock { counts[ObjectIdentifier(token), default: 0] += 1 }
    }

    /// Counts one holder less, and locks the token (logs out, wipes the PIN) when none is left.
    func release(_ token: WalletToken) {
        mutex.withLock {
            let key = ObjectIdentifier(token)
            let left = (counts[key] ?? 1) - 1
            counts[key] = left > 0 ? left : nil
            if left <= 0 { token.lock() }
        }
    }

    /// Locks the token if no session holds it.
    func lockIfUnheld(_ token: WalletToken) {
        mutex.withLock {
            if counts[ObjectIdentifier(token)] == nil { token.lock() }
        }
    }
}

/// One session's hold on its unlocked token, from the PIN's entry to the session's end or the hold's deadline,
/// whichever comes first. The session's thread and its timer's thread both end it, so it sits behind a lock,
/// and exactly one of them gets to release the token.
final class PINHold: @unchecked Sendable {
    private let lock = NSLock()
    private var deadline: Int64?
    private var length: Int64 = 0
    private var generation = 0
    private var ranOut = false

    /// When the hold ends; nil while none is held.
    var until: Int64? { lock.withLock { deadline } }
    /// Whether a hold of this session ended because its time was up.
    var expired: Bool { lock.withLock { ranOut } }
    /// How long the latest hold lasts from its start, for the sentences that name it.
    var milliseconds: Int64 { lock.withLock { length } }

    /// Starts (or renews) the hold until `until`, `milliseconds` from now; returns its generation, which the
    /// timer names.
    func begin(until: Int64, milliseconds: Int64) -> Int {
        lock.withLock {
            deadline = until
            length = milliseconds
            generation += 1
            return generation
        }
    }

    /// Ends the hold if one is held (and, given `generation`, only if it is still that one). Returns whether
    /// it was held: the caller then releases the token, once.
    func end(generation expected: Int? = nil, expired: Bool) -> Bool {
        lock.withLock {
            guard deadline != nil, expected == nil || expected == generation else { return false }
            deadline = nil
            if expired { ranOut = true }
            return true
        }
    }
}

/// The process's PIN-hold timers, on one thread of their own. Dispatch's shared pool is no place for them:
/// its few threads may all be blocked in sessions (a stalled ranging source, a silent peer), and the wipe
/// would wait for one to come free.
final class HoldTimers: @unchecked Sendable {
    static let shared = HoldTimers()
    private let condition = NSCondition()
    private var pending: [(due: Date, fire: @Sendable () -> Void)] = []
    private var started = false

    /// Calls `fire` on the timer thread once `seconds` have passed.
    func arm(after seconds: Double, _ fire: @escaping @Sendable () -> Void) {
        condition.withLock {
            pending.append((Date(timeIntervalSinceNow: seconds), fire))
            if !started {
                started = true
                let thread = Thread { [unowned self] in run() }
                thread.name = "secure-pin-hold"
                thread.start()
            }
            condition.signal()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while true {
                let now = Date()
                if let index = pending.indices.min(by: { pending[$0].due < pending[$1].due }) {
                    if pending[index].due <= now { break }
                    _ = condition.wait(until: pending[index].due)
                } else {
                    condition.wait()
                }
            }
            let now = Date()
            let due = pending.filter { $0.due <= now }
            pending.removeAll { $0.due <= now }
            condition.unlock()
            due.forEach { $0.fire() }
        }
    }
}
