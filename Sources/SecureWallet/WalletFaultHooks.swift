/// Crash points inside `Wallet.append`, for the deterministic simulator only (SecureSimulation, issue 7).
/// They are SPI (`@_spi(Simulation)`): the `secure` executable never imports them and never sets them, so
/// in production `faultHooks` is always nil and `append` runs unchanged.
///
/// A hook "crashes" the wallet by throwing; the simulator then drops the `Wallet` object with everything
/// it held in memory and opens the wallet again from its files, as a process restarted after SIGKILL would.
/// The real-process crash harness (scripts/crash-test) covers what an in-process crash cannot: a kill in
/// the middle of SQLite's own commit and of the durable file writes.
@_spi(Simulation) public struct WalletFaultHooks {
    /// Called after the checkpoint is signed and before the database commit.
    public var beforeCommit: (() throws -> Void)?
    /// Called after the durable commit and before the anchor moves: the window the anchor check on open
    /// exists for.
    public var afterCommit: (() throws -> Void)?
    /// A deliberately broken variant for the simulator's own tests: move the anchor before the commit
    /// (so a crash in between leaves an anchor ahead of the database). Never set outside those tests.
    public var anchorBeforeCommit = false
    /// A deliberately broken variant for the simulator's own tests: count nothing against the payee's
    /// offline limit (so it approves and credits past it). Never set outside those tests.
    public var ignoresOfflineLimit = false

    public init(
        beforeCommit: (() throws -> Void)? = nil, afterCommit: (() throws -> Void)? = nil,
        anchorBeforeCommit: Bool = false
    ) {
        self.beforeCommit = beforeCommit
        self.afterCommit = afterCommit
        self.anchorBeforeCommit = anchorBeforeCommit
    }
}
