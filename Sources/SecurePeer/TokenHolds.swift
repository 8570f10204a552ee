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
