import Foundation
import SecureCore
import SecureCrypto
@_spi(Simulation) import SecurePeer
import SecureStore
import SecureTestSupport
import SecureToken
@_spi(Simulation) import SecureWallet

/// The simulated clock: milliseconds, moved only by the scheduler.
final class SimulatedClock: @unchecked Sendable {
    var now: Int64 = 1_767_225_600_000 // 2026-01-01T00:00:00Z
}

/// Thrown by a crash point: the wallet's process is gone.
struct SimulatedCrash: Error, CustomStringConvertible {
    let point: String
    var description: String { "simulated crash at \(point)" }
}

/// One simulated device: a wallet folder on disk, its token (which outlives crashes of the wallet), and
/// the `Wallet` while its process is up.
final class SimulatedWallet {
    let index: Int
    let name: String
    let paths: WalletPaths
    /// The wallet's token; a new one after a recovery (the old one was lost).
    var token: SimulatedToken
    let backup: SimulatedToken
    /// The open wallet; nil while the process is down (crashed, not yet restarted).
    var wallet: Wallet?
    /// Set when the simulator creates the wallet, before its first step.
    var walletID: WalletID!
    /// When a crashed wallet comes back.
    var restartAt: Int64 = 0
    /// This device's clock is off by this much (clock skew).
    var skewMilliseconds: Int64 = 0
    /// In a peer session (one process holds a wallet at a time).
    var busy = false
    /// Restored from an old copy with its anchor (the attack the anchor cannot see): no longer honest.
    var restoredWithAnchor = false
    /// Restored from an old copy of the database alone: must have locked.
    var restoredDatabaseOnly = false
    /// When restored, the token's anchor was past the old copy (so the copy must be caught).
    var anchorAheadOfRestore = false
    /// Vouchers minted to it and not yet deposited.
    var vouchers: [SignedVoucher] = []
    /// An old copy of the folder and of the token's objects, for the restore fault.
    var snapshot: (directory: String, objects: [(application: String, label: String, value: [UInt8])], size: UInt64)?
    /// The largest anchor checkpoint size seen on the token, which must never shrink (unless restored).
    var anchorSizeSeen: UInt64 = 0
    /// The anchor objects last decoded by `anchoredSize`, and the answer.
    private var anchorCache: (values: [[UInt8]], size: UInt64?)?

    init(index: Int, directory: String) {
        self.index = index
        name = "w\(index)"
        paths = WalletPaths(directory: directory + "/" + name)
        token = SimulatedToken(label: "sim-\(index)")
        backup = SimulatedToken(label: "sim-\(index)-backup")
    }

    var isUp: Bool { wallet != nil }
    var isHonest: Bool { !restoredWithAnchor && !restoredDatabaseOnly }
    var isLocked: Bool { wallet?.lockReason != nil }

    /// Unlocks the token for one operation; faults in the login surface as thrown token errors.
    func unlockToken() throws {
        if !token.isUnlocked { try token.unlock(pin: try PIN("1234"), confirmFinalTry: false) }
    }
}

extension SimulatedWallet {
    /// The anchor's checkpoint size as the token holds it (read without faults: this is the auditor's look).
    func anchoredSize() -> UInt64? {
        guard let walletID else { return nil }
        let label = "anchor-" + walletID.hex
        let values = token.objects.filter { $0.label == label }.map(\.value)
        // Decoding a checkpoint parses a public key in OpenSSL; the auditor looks after every step, and the
        // anchor changes far less often, so the answer is kept until the stored bytes change.
        if let cached = anchorCache, cached.values == values { return cached.size }
        let size = values.compactMap { (try? SignedCheckpoint.decode($0))??.checkpoint.size }.max()
        anchorCache = (values, size)
        return size
    }

    /// Copies the folder (database, WAL, wrapped key, metadata) and the token's objects.
    func takeSnapshot(into directory: String) throws {
        guard let wallet else { return }
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: paths.directory) where name != "lock" {
            try FileManager.default.copyItem(atPath: paths.directory + "/" + name, toPath: directory + "/" + name)
        }
        snapshot = (directory, token.objects, wallet.size)
    }

    /// Puts the old copy back over the folder (the wallet must be down).
    func restoreSnapshot(withAnchor: Bool) throws {
        guard let snapshot, wallet == nil else { return }
        for name in try FileManager.default.contentsOfDirectory(atPath: paths.directory) where name != "lock" {
            try FileManager.default.removeItem(atPath: paths.directory + "/" + name)
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: snapshot.directory) {
            try FileManager.default.copyItem(
                atPath: snapshot.directory + "/" + name, toPath: paths.directory + "/" + name)
        }
        if withAnchor { token.objects = snapshot.objects }
    }
}
