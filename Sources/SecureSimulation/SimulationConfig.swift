import Foundation
import SecureCore

/// What one simulation run does. A run is a pure function of its configuration: the seed fixes every
/// choice the scheduler, the workload and the faults make (see docs/SIMULATION.md for what is not fixed).
public struct SimulationConfig: Sendable {
    /// The seed; `secure-sim --seed S` replays it.
    public var seed: UInt64
    /// Scheduler steps before the run heals every fault and drains (a step delivers one message, carries out
    /// one machine action, fires one timeout, injects one fault or starts one operation).
    public var steps: Int
    /// Wallets besides the issuer.
    public var walletCount: Int
    /// Peer sessions that may run at once (each between two free wallets).
    public var sessionCountMax: Int
    /// Whether faults are injected at all (off for the plain workload tests).
    public var faults: Bool
    /// Whether the dishonest actors (`Adversary`: forger, refusal forger, restorer) attack every
    /// `Adversary.period` steps.
    public var adversaries = true
    /// Whether this run alone must credit a payment in a session (`Simulator.paidMinimum`). A batch of many
    /// seeds checks the floor over the batch instead (`secure-sim`): under heavy faults about one seed in
    /// three hundred moves no money at all, which says nothing about the code.
    public var paymentRequired = true
    /// Where the wallets' files go; /dev/shm keeps SQLCipher's fsyncs cheap (see docs/SIMULATION.md).
    public var directory: String
    /// A deliberately broken variant, selectable only from tests (`@testable import`).
    var broken: BrokenVariant?

    public init(
        seed: UInt64, steps: Int = 3_000, walletCount: Int = 4, sessionCountMax: Int = 2, faults: Bool = true,
        directory: String = SimulationConfig.defaultDirectory
    ) {
        self.seed = seed
        self.steps = steps
        self.walletCount = walletCount
        self.sessionCountMax = sessionCountMax
        self.faults = faults
        self.directory = directory
    }

    /// /dev/shm where it exists (tmpfs: fsync costs nothing), else the temporary folder.
    public static var defaultDirectory: String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue {
            return "/dev/shm"
        }
        return FileManager.default.temporaryDirectory.path
    }
}

/// Bugs the simulator must catch, planted in the simulator's own driver or through the wallet's SPI hooks.
/// Each exists to show that an invariant has teeth; none is reachable from `secure` or `secure-sim`.
enum BrokenVariant: String, CaseIterable, Sendable {
    /// The payer commits its debit as soon as the payee accepts the offer, before `ready`.
    case debitBeforeReady
    /// The payee credits a re-delivered transfer again (under a fresh statement id).
    case nonIdempotentAccept
    /// The wallet moves its anchor before the database commit.
    case anchorBeforeCommit
    /// The payer commits the debit and then ends the session as refused (a refusal check after the debit).
    case refusalAfterDebit
    /// Rotate then pay: the driver answers the lookup at once with the peer's key-event log as known before,
    /// instead of holding the session until the peer's rotated log is followed.
    case lookupBeforeKeyEvents
    /// The payee credits the forger's transfer after the wallet dropped it (issue 12's invariant 1).
    case creditsForgedTransfer
    /// The payer reverses on the refusal forger's refusal after the wallet dropped it (invariant 2).
    case reversesOnForgedRefusal
    /// The payee credits a restored payer's second payment after the wallet refused it (invariant 3).
    case creditsRestoredPayment
    /// The payee credits the self-issuer's transfer of an asset it never trusted (invariant 1).
    case creditsUntrustedAsset
    /// The payee counts nothing against its offline limit, so it approves and credits past it (invariant 1,
    /// last clause).
    case creditsPastOfflineLimit
}

/// An invariant that failed, with what the run needs to be replayed.
public struct SimulationFailure: Error, CustomStringConvertible, Sendable {
    public let seed: UInt64
    public let step: Int
    public let invariant: String
    public let detail: String
    /// The last events before the failure.
    public let trace: [String]
    public let replay: String

    public var description: String {
        "simulation failed at step \(step) of seed \(seed): [\(invariant)] \(detail)\n"
            + "last events:\n" + trace.map { "  " + $0 }.joined(separator: "\n") + "\n"
            + "replay: \(replay)"
    }
}

/// What a run did, for the report.
public struct SimulationStats: Sendable, CustomStringConvertible {
    public var steps = 0
    public var sessions = 0
    public var outcomes: [String: Int] = [:]
    public var deposits = 0
    public var fileTransfers = 0
    /// File transfers refused as older than a payment the payee already holds from the same payer.
    public var staleFiles = 0
    /// File transfers an honest payee refused by policy as past its offline limit for their payer.
    public var limitedFiles = 0
    public var crashes = 0
    public var restarts = 0
    public var restores = 0
    /// Wallets recovered onto a new token after losing theirs.
    public var recoveries = 0
    public var lockedByRestore = 0
    public var tokenFaults = 0
    public var linkFaults = 0
    public var timeouts = 0
    public var retries = 0
    public var rotations = 0
    /// Sessions in which a wallet followed its peer's newer key-event log.
    public var keyLogsFollowed = 0
    /// Credits by an honest payee of a transfer that today's rules show to be a double spend (each must
    /// come with fork evidence).
    public var doubleSpendsDetectable = 0
    /// The forger's file transfers claiming an honest wallet's id, and how many an honest wallet credited.
    public var forgedTransfers = 0
    public var forgedCredited = 0
    /// The refusal forger's refusals handed to honest payers, and how many reversed a payment.
    public var forgedRefusals = 0
    public var forgedReversed = 0
    /// The self-issuer's payments of an asset of its own issuer, and how many an honest wallet credited.
    public var selfIssued = 0
    public var selfIssuedCredited = 0
    /// The restorer's second payments by file to the same payee, how many were refused and credited, how
    /// many met the payee's history at a size it holds (evidence due), and how many left evidence.
    public var restorerAttempts = 0
    public var restorerRefused = 0
    public var restorerCredited = 0
    public var restorerEvidenceDue = 0
    public var restorerEvidence = 0
    public var excessTraced: Int64 = 0
    public var excessCoveredByEvidence: Int64 = 0
    public var entries: UInt64 = 0
    /// A digest of the event trace; two runs of one seed must agree on it.
    public var traceDigest = ""

    public var description: String {
        let outcomeText = outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return
            "steps=\(steps) sessions=\(sessions) [\(outcomeText)] deposits=\(deposits) files=\(fileTransfers) stale-files=\(staleFiles) "
            + "limited-files=\(limitedFiles) "
            + "retries=\(retries) rotations=\(rotations) followed=\(keyLogsFollowed) crashes=\(crashes) restarts=\(restarts) restores=\(restores) recoveries=\(recoveries) locked=\(lockedByRestore) "
            + "tokenFaults=\(tokenFaults) linkFaults=\(linkFaults) timeouts=\(timeouts) entries=\(entries) "
            + "forged=\(forgedTransfers) credited=\(forgedCredited) forgedRefusals=\(forgedRefusals) reversed=\(forgedReversed) "
            + "selfIssued=\(selfIssued) selfIssuedCredited=\(selfIssuedCredited) "
            + "restorer=\(restorerAttempts) refused=\(restorerRefused) restorerCredited=\(restorerCredited) evidence=\(restorerEvidence)/\(restorerEvidenceDue) "
            + "doubleSpends=\(doubleSpendsDetectable) excess=\(excessTraced) covered=\(excessCoveredByEvidence) trace=\(traceDigest.prefix(16))"
    }
}
