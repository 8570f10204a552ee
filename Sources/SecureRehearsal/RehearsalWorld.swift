import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken
import SecureWallet

#if canImport(Glibc)
    import Glibc
#endif

/// The rehearsal's clock: milliseconds, starting at the wall clock and moved only by the engine, which jumps
/// it to the next deadline when both sides wait (a 60 s countdown plays in milliseconds).
public final class RehearsalClock: @unchecked Sendable {
    /// Now, on the rehearsal's clock.
    public var now: Int64
    /// When the rehearsal started.
    public let start: Int64

    init(start: Int64) {
        self.now = start
        self.start = start
    }
}

/// Why a rehearsal could not be set up or run (not an ending: the file's endings are results).
public struct RehearsalError: CodedError {
    public enum Code: String, StableCode {
        /// No tmpfs to keep the rehearsal wallets on: they must never reach a disk.
        case noMemoryFolder = "rehearsal-no-memory-folder"
        /// A rehearsal wallet could not be made or funded.
        case setup = "rehearsal-setup"
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var kind: FailureKind { .failure }
}

/// One rehearsal wallet: its token, its backup token and the open wallet.
public final class RehearsalWallet {
    public let name: String
    public let token: RehearsalToken
    let backup: RehearsalToken
    public let wallet: Wallet

    init(name: String, directory: String, clock: RehearsalClock, isIssuer: Bool) throws {
        self.name = name
        token = RehearsalToken(label: "rehearsal-\(name)")
        backup = RehearsalToken(label: "rehearsal-\(name)-backup")
        try token.unlock(pin: try PIN(RehearsalToken.pin), confirmFinalTry: false)
        try backup.unlock(pin: try PIN(RehearsalToken.pin), confirmFinalTry: false)
        let options = Wallet.InitOptions(
            tokenURI: token.uri, backup: (backup, backup.uri), allowFileAnchor: false, label: name, isIssuer: isIssuer)
        nonisolated(unsafe) let time = clock
        wallet = try Wallet.create(
            paths: WalletPaths(directory: directory + "/" + name), token: token, options: options,
            clock: { time.now })
        backup.lock()
    }

    /// The wallet's balance of one asset.
    public func balance(_ asset: Asset) -> Money { wallet.state.balance(asset) }
}

/// The three rehearsal wallets (docs/TILL.md §4.1) in a private folder on tmpfs, removed when the world goes:
/// the payer, the till and the rehearsal issuer that mints the payer's balance. Both trust the issuer, so the
/// payment is valid. Nothing here opens the real wallet folder or a PKCS#11 module.
public final class RehearsalWorld {
    public let directory: String
    public let clock: RehearsalClock
    public let payer: RehearsalWallet
    public let till: RehearsalWallet
    public let issuer: RehearsalWallet
    /// The asset the payment moves: the rehearsal issuer's, in the amount's currency.
    public let asset: Asset

    /// Makes the folder and the wallets, mints the file's `balance` to the payer and sets its budget.
    /// `environment` gives $XDG_RUNTIME_DIR; `fallback` is the folder tried after it (tests pass nil).
    public init(
        file: RehearsalFile, environment: [String: String] = ProcessInfo.processInfo.environment,
        fallback: String? = "/dev/shm"
    ) throws {
        directory = try Self.makeFolder(candidates: [environment["XDG_RUNTIME_DIR"], fallback])
        clock = RehearsalClock(start: Wallet.systemClock())
        do {
            issuer = try RehearsalWallet(name: "issuer", directory: directory, clock: clock, isIssuer: true)
            payer = try RehearsalWallet(name: "payer", directory: directory, clock: clock, isIssuer: false)
            till = try RehearsalWallet(name: "till", directory: directory, clock: clock, isIssuer: false)
            asset = Asset(issuer: issuer.wallet.walletID, currency: file.amount.currency)
            let card = WalletCard(log: issuer.wallet.keyLog)
            for side in [payer, till] { _ = try side.wallet.trust(issuer: card) }
            if !file.balance.isZero {
                let voucher = try issuer.wallet.mint(to: WalletCard(log: payer.wallet.keyLog), amount: file.balance)
                _ = try payer.wallet.deposit(voucher)
            }
            if let budget = file.budget {
                let value = try Budget(
                    category: budget.category, limit: budget.limit, window: .month, isHardCap: budget.isHardCap,
                    timeZoneIdentifier: "UTC")
                try payer.wallet.append { position, previous, time in
                    try LedgerEntry(
                        position: position, id: .random(), kind: .budgetChange, amount: nil,
                        category: value.category, time: time, payload: BudgetChange.set(value).payload,
                        previousLink: previous)
                }
            }
            for side in [payer, till, issuer] { side.token.lock() }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit { remove() }

    /// Removes the folder and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
        Self.live.withLock { _ = $0.remove(directory) }
    }

    /// The folders of the worlds alive in this process, for a signal handler to remove before the process
    /// exits (a rehearsal interrupted at its prompt leaves nothing on tmpfs).
    private static let live = LiveFolders()

    /// Removes every live world's folder; safe from a signal source's handler thread.
    public static func removeLiveFolders() {
        for folder in live.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
    }

    private final class LiveFolders: @unchecked Sendable {
        private let lock = NSLock()
        private var folders: Set<String> = []
        func withLock<T>(_ body: (inout Set<String>) -> T) -> T { lock.withLock { body(&folders) } }
    }

    /// A fresh mode-0700 folder (mkdtemp) under $XDG_RUNTIME_DIR when it is tmpfs, else /dev/shm; refused
    /// when neither is.
    static func makeFolder(candidates: [String?]) throws -> String {
        guard let base = candidates.compactMap({ $0 }).filter({ !$0.isEmpty }).first(where: isTmpfs) else {
            throw RehearsalError(
                .noMemoryFolder,
                "a rehearsal keeps its wallets in memory, on tmpfs, and neither $XDG_RUNTIME_DIR nor /dev/shm is one")
        }
        var template = Array((base + "/secure-rehearsal-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RehearsalError(
                .noMemoryFolder, "cannot make a rehearsal folder in \(base): \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        chmod(path, 0o700)
        live.withLock { _ = $0.insert(path) }
        return path
    }

    /// Whether the filesystem holding `path` is tmpfs: the mount in /proc/self/mounts with the longest mount
    /// point that contains the path's real location (statfs's f_type is not in the Glibc module).
    static func isTmpfs(_ path: String) -> Bool {
        guard let resolved = realpath(path, nil) else { return false }
        let real = String(cString: resolved)
        free(resolved)
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        var best: (point: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            // Mount points escape spaces as \040; a rehearsal base never holds one.
            let point = String(fields[1])
            let inside = point == "/" || real == point || real.hasPrefix(point + "/")
            if inside, point.count >= (best?.point.count ?? -1) { best = (point, String(fields[2])) }
        }
        return best?.type == "tmpfs"
    }
}
