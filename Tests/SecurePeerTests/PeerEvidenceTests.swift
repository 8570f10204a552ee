import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureWallet

/// What a wallet does with fork evidence in a session (evidence v2): a forger's evidence naming a real
/// wallet id is never kept, whoever found it; genuine evidence a peer handed over is kept to pass on but
/// bars nobody; only evidence this wallet found itself bars the accused, and the ban names its digest.
@Suite("Fork evidence in sessions", .serialized)
struct PeerEvidenceTests {
    /// A session side that sends into a list and never ranges: enough to carry out evidence actions.
    final class Quiet: PeerEnvironment {
        let person: PeerInterface
        var sent: [PeerMessage] = []
        init(person: PeerInterface) { self.person = person }
        func send(_ message: PeerMessage) throws { sent.append(message) }
        func now() -> Int64 { Wallet.systemClock() }
        func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
            throw WalletError(.notFound, "no ranging in this test")
        }
        func holdToken(_ token: WalletToken) {}
        func releaseToken(_ token: WalletToken) {}
        func lockTokenIfUnheld(_ token: WalletToken) {}
    }

    /// Two checkpoints of `wallet`'s key, of one size, that differ.
    static func fork(_ wallet: SoftwareWallet) throws -> ForkEvidence.Kind {
        var one = wallet
        var two = wallet
        try one.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1]))
        try two.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [2]))
        return .conflictingCheckpoints(try one.checkpoint(), try two.checkpoint())
    }

    @Test func forgedEvidenceIsNeverKeptAndAPeersEvidenceBarsNobody() throws {
        let bob = try TestWallet("evidence-b")
        let wallet = bob.wallet!
        let context = PeerSessionContext(
            transcriptHash: .random(), channelBinding: SystemRandom.bytes(32),
            hello: try PeerActions.hello(wallet: wallet, displayName: "Bob", randomBytes: { SystemRandom.bytes($0) }),
            rangingPolicy: RangingPolicy(allowsSimulated: true))
        let actions = PeerActions(
            wallet: wallet, machine: .payee(PayeeMachine(context: context, request: nil)),
            helloSize: wallet.latest!.checkpoint.size,
            environment: Quiet(person: ScriptedPerson(pinPath: bob.main.pinPath)))
        // A forger's checkpoints that name a real wallet id, with that wallet's real log and with its own.
        let victim = try SoftwareWallet(seed: 81)
        let forger = try SoftwareWallet(seed: 82, claiming: victim.walletID)
        let forged = try Self.fork(forger)
        for log in [victim.log, forger.log] {
            for foundHere in [false, true] {
                _ = try actions.perform(.keepEvidence(ForkEvidence(forged, log: log), foundHere: foundHere))
            }
        }
        #expect(try wallet.ledger.evidence().isEmpty, "forged evidence is never kept")
        #expect(try wallet.ledger.banningEvidence(against: victim.walletID) == nil)
        // Genuine evidence a peer handed over is kept to pass on, and bars nobody.
        let forked = try SoftwareWallet(seed: 83)
        let genuine = ForkEvidence(try Self.fork(forked), log: forked.log)
        _ = try actions.perform(.keepEvidence(genuine, foundHere: false))
        #expect(try wallet.ledger.evidence() == [genuine.encoded])
        #expect(try wallet.ledger.banningEvidence(against: forked.walletID) == nil)
        // Found by this wallet itself, it bars the accused, named by its digest.
        _ = try actions.perform(.keepEvidence(genuine, foundHere: true))
        #expect(try wallet.ledger.banningEvidence(against: forked.walletID) == EvidenceDigest(of: genuine.encoded))
        #expect(wallet.ledger.physicalProblems().isEmpty, "\(wallet.ledger.physicalProblems())")
    }
}
