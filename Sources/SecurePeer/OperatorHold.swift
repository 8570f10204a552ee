import Foundation
import SecureCore
import SecureToken
import SecureWallet

/// A till operator's approval (docs/TILL.md §1.4): locking an amount logs the token in with the PIN and holds
/// it for at most `TillLimits.pinHoldSeconds` from that entry, whatever happens. Payer sessions that answer the
/// till's request exactly are approved from this hold, with its absolute end; none starts a fresh 60 s. The
/// PIN itself is not kept here: the token's login is what is held, and it ends (the token is locked unless a
/// session still holds it) when the time is up or the amount ends.
public final class OperatorHold: @unchecked Sendable {
    private let token: WalletToken
    private let hold = PINHold()

    public init(token: WalletToken) { self.token = token }

    /// When the hold ends (milliseconds on the wallet clock); nil while none is held.
    public var until: Int64? { hold.until }

    /// Logs in with `pin` and holds the token until `now` + the hold's length. A wrong or locked PIN throws the
    /// token's error and holds nothing. Renewing (a PIN asked again at connect) replaces the end.
    public func begin(pin: PIN, now: Int64 = Wallet.systemClock()) throws {
        let renewing = hold.until != nil
        if !renewing { TokenHolds.shared.acquire(token) }
        do {
            try token.unlock(pin: pin, confirmFinalTry: false)
        } catch {
            if !renewing {
                _ = hold.end(expired: false)
                TokenHolds.shared.release(token)
            }
            throw error
        }
        let length = Int64(TillLimits.pinHoldSeconds) * 1000
        let generation = hold.begin(until: now + length, milliseconds: length)
        HoldTimers.shared.arm(after: Double(length) / 1000) { [weak self] in self?.end(generation: generation) }
    }

    /// Ends the hold now (the amount ended); the token locks unless a session still holds it.
    public func end() { end(generation: nil) }

    private func end(generation: Int?) {
        if hold.end(generation: generation, expired: generation != nil) { TokenHolds.shared.release(token) }
    }
}
