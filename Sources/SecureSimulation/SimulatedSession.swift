import Foundation
import SecureCore
import SecureCrypto
@_spi(Simulation) import SecurePeer
import SecureStore
import SecureTestSupport
import SecureToken
@_spi(Simulation) import SecureWallet

/// One side of a simulated peer session: the real `PeerActions` (the same code `secure pay` runs) with
/// its machine, the actions it returned and not yet carried out, and the messages on their way to it.
/// What differs from `PeerDriver` is the environment (`SimulatedEnvironment`): the clock is simulated, the
/// link is a message queue with faults instead of a SecureChannel, and each action is one scheduler step.
final class SessionEnd {
    let walletIndex: Int
    let isPayer: Bool
    /// The end's PeerActions; nil once the end is closed (its wallet may be reopened meanwhile).
    var actions: PeerActions?
    var queue: [PeerAction] = []
    /// Messages on the way to this end: when they may arrive, and their bytes.
    var inbox: [(deliverAt: Int64, bytes: [UInt8])] = []
    var currentWait: PeerWait?
    var deadline: Int64 = 0
    /// The process is gone (crashed) or the session ended here and the channel is closed.
    var closed = false
    var crashed = false
    /// The process hangs: it neither acts nor reads (a silent peer), until `silentUntil` or healing,
    /// as a stopped process resumes; its timers have run out meanwhile and fire when it wakes.
    var silent = false
    var silentUntil: Int64 = 0
    /// How the end's session ended, kept when its actions are let go.
    private var finalOutcome: PeerOutcome?

    init(walletIndex: Int, isPayer: Bool) {
        self.walletIndex = walletIndex
        self.isPayer = isPayer
    }

    var outcome: PeerOutcome? { actions?.outcome ?? finalOutcome }
    var wait: PeerWait? { actions?.wait }
    var pinHeldUntil: Int64? { actions?.pinHeldUntil }
    /// Whether a step of this end can run now: an action, or a message held for the lookup that is answered.
    var canAct: Bool { !queue.isEmpty || actions?.hasReleasableMessage == true }

    /// Closes the end: the token is let go (locked), the actions and their wallet are dropped.
    func close(crashed: Bool) {
        finalOutcome = outcome
        if !crashed { actions?.finishSession() }
        actions = nil
        closed = true
        self.crashed = crashed
        queue = []
        if crashed { inbox = [] }
    }
}

/// A simulated peer session between two wallets.
final class SimulatedSession {
    enum Kind: String { case pay, request, retry }

    let number: Int
    let kind: Kind
    let payer: SessionEnd
    let payee: SessionEnd
    /// The transfer id the payer's machine will use (or re-sends, for a retry).
    let transferID: TransferID
    /// The payer's ledger size when the session started: a debit beyond it belongs to this session.
    let payerSizeAtStart: UInt64
    /// Messages sent while the link is partitioned are lost.
    var partitionedUntil: Int64 = 0
    /// The channel binding both sides share (a channel would derive it from its handshake).
    let binding: [UInt8]
    /// The amount offered or requested.
    let amount: AssetAmount

    init(
        number: Int, kind: Kind, payer: SessionEnd, payee: SessionEnd, transferID: TransferID, payerSizeAtStart: UInt64,
        binding: [UInt8], amount: AssetAmount
    ) {
        self.binding = binding
        self.amount = amount
        self.number = number
        self.kind = kind
        self.payer = payer
        self.payee = payee
        self.transferID = transferID
        self.payerSizeAtStart = payerSizeAtStart
    }

    func other(_ end: SessionEnd) -> SessionEnd { end === payer ? payee : payer }
    var isOver: Bool { payer.closed && payee.closed }
}
