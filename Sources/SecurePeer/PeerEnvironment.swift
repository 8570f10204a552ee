import Foundation
import SecureCore
import SecureToken

/// A point in a session where a simulated process may die: before and after each step that persists.
/// PeerActions passes each one to its environment; only the simulator acts on them.
public enum PeerCrashPoint: String, Sendable, CaseIterable {
    case beforeReadyRecord, afterReadyRecord
    case beforeDebit, afterDebit
    case beforeCredit, afterCredit
    case beforeReceipt, beforeReversal
}

/// What differs between the callers of `PeerActions`: the CLI's channel and system clock, the simulator's
/// seeded link, clock and crash points, the benchmark's in-order queue. Everything else about carrying
/// out a machine's actions is the same code for all of them.
public protocol PeerEnvironment: AnyObject {
    /// The person: prompts, the PIN and what to show.
    var person: PeerInterface { get }
    /// Puts one whole message on the link; a throw means the link is gone.
    func send(_ message: PeerMessage) throws
    /// Milliseconds since the epoch on this environment's clock (the PIN hold runs on it).
    func now() -> Int64
    /// Takes one measurement's ranging samples, showing each distance as it arrives.
    func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32])
    /// Counts this session as a holder of the unlocked token (other sessions then leave it unlocked).
    func holdToken(_ token: WalletToken)
    /// This session lets go of the token; the token locks when no holder is left.
    func releaseToken(_ token: WalletToken)
    /// Locks the token unless another session holds it.
    func lockTokenIfUnheld(_ token: WalletToken)
    /// Calls `fire` once after `milliseconds` on another thread, whatever the session is doing: the PIN hold's
    /// timer. Environments whose loop checks the hold on their own clock (the simulator) need not.
    func armPINTimer(milliseconds: Int64, _ fire: @escaping @Sendable () -> Void)
    /// A point where the process may die (the simulator throws); the CLI does nothing.
    func crashPoint(_ point: PeerCrashPoint, of action: PeerAction) throws
    /// An action failed with this error. Return to let PeerActions turn it into the machine's answer
    /// (link drop, local failure, or nothing for side work); throw to end the process (a simulated crash).
    func failed(_ error: Error, during action: PeerAction) throws
}

extension PeerEnvironment {
    public func armPINTimer(milliseconds: Int64, _ fire: @escaping @Sendable () -> Void) {}

    public func crashPoint(_ point: PeerCrashPoint, of action: PeerAction) throws {}

    public func failed(_ error: Error, during action: PeerAction) throws {
        person.event("error", ["error": "\(error)"], "\(error)")
    }
}
