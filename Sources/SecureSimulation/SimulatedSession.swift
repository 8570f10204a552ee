import Foundation
import SecureCore
import SecureCrypto
@_spi(Simulation) import SecurePeer
@_spi(Simulation) import SecureWallet
import SecureStore
import SecureTestSupport
import SecureToken

/// One side of a simulated peer session: the real SecureCore machine, the actions it asked for and not yet
/// carried out, and the messages on their way to it. This mirrors `PeerDriver` action by action (see
/// PeerDriver.performThrowing); the differences are the clock (simulated), the link (a message queue with
/// faults instead of a SecureChannel) and that each action is one scheduler step.
final class SessionEnd {
    enum Machine {
        case payer(PayerMachine)
        case payee(PayeeMachine)
    }

    let walletIndex: Int
    var machine: Machine
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
    var peerKey: P256.PublicKey?
    var pinHeldUntil: Int64?
    var helloSize: UInt64
    /// The checkpoint of the peer this wallet held when the session started (from `lookUpPeer`).
    var heldPeerCheckpoint: SignedCheckpoint?
    /// Amounts of `ready` messages this end received, by offer id (the payer's right to debit).
    var readiesReceived: [(offerID: [UInt8], amount: Money)] = []

    init(walletIndex: Int, machine: Machine, helloSize: UInt64) {
        self.walletIndex = walletIndex
        self.machine = machine
        self.helloSize = helloSize
    }

    var outcome: PeerOutcome? {
        switch machine {
        case .payer(let payer): payer.outcome
        case .payee(let payee): payee.outcome
        }
    }

    var wait: PeerWait? {
        switch machine {
        case .payer(let payer): payer.wait
        case .payee(let payee): payee.wait
        }
    }

    var isPayer: Bool {
        if case .payer = machine { return true }
        return false
    }

    func mutate(payer: (inout PayerMachine) -> [PeerAction], payee: (inout PayeeMachine) -> [PeerAction]) -> [PeerAction] {
        switch machine {
        case .payer(var value):
            defer { machine = .payer(value) }
            return payer(&value)
        case .payee(var value):
            defer { machine = .payee(value) }
            return payee(&value)
        }
    }

    func receive(_ message: PeerMessage) throws -> [PeerAction] {
        switch machine {
        case .payer(var value):
            defer { machine = .payer(value) }
            return try value.receive(message)
        case .payee(var value):
            defer { machine = .payee(value) }
            return try value.receive(message)
        }
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
    let transferID: [UInt8]
    /// The payer's ledger size when the session started: a debit beyond it belongs to this session.
    let payerSizeAtStart: UInt64
    /// Messages sent while the link is partitioned are lost.
    var partitionedUntil: Int64 = 0
    /// The channel binding both sides share (a channel would derive it from its handshake).
    let binding: [UInt8]
    /// The amount offered or requested.
    let amount: Money

    init(number: Int, kind: Kind, payer: SessionEnd, payee: SessionEnd, transferID: [UInt8], payerSizeAtStart: UInt64,
         binding: [UInt8], amount: Money) {
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
