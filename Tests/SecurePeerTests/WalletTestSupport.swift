import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken

@testable import SecurePeer
@testable import SecureStore
@testable import SecureWallet

/// A wallet on two fresh SoftHSM tokens (main and backup) in its own folder.
final class TestWallet {
    let main: TestTokens.Fresh
    let backup: TestTokens.Fresh
    let paths: WalletPaths
    private(set) var wallet: Wallet?
    var now: Int64 = 1_767_225_600_000 // 2026-01-01T00:00:00Z

    /// A wallet, or with `isIssuer` an issuer's wallet (`secure issuer init`); `inceptionVersion` 2 makes it as a
    /// wallet made before contact keys was.
    init(_ name: String = "w", isIssuer: Bool = false, inceptionVersion: UInt8 = KeyEvent.encodingVersion) throws {
        main = try TestTokens.fresh(name)
        backup = try TestTokens.fresh(name + "-bk")
        paths = WalletPaths(directory: TestTokens.layout.directory + "/wallet-\(name)-\(UUID().uuidString.prefix(8))")
        let backupSession = try backup.session()
        defer { backupSession.close() }
        var options = Wallet.InitOptions(
            tokenURI: main.uri, backup: (backupSession, backup.uri), allowFileAnchor: false, isIssuer: isIssuer)
        options.inceptionVersion = inceptionVersion
        wallet = try Wallet.create(paths: paths, token: try main.session(), options: options, clock: clockFunction())
    }

    private func clockFunction() -> @Sendable () -> Int64 {
        let box = ClockBox(self)
        return { box.value }
    }

    /// Closes the wallet (releases its lock, its database and its token session).
    func close() {
        (wallet?.token as? TokenSession)?.close()
        wallet = nil
    }

    /// Opens the wallet again from its files.
    @discardableResult
    func reopen() throws -> Wallet {
        close()
        let opened = try Wallet.open(paths: paths, token: try main.session(), clock: clockFunction())
        wallet = opened
        return opened
    }

    /// The unwrapped database key, for tests that tamper with the database directly.
    func databaseKey() throws -> SecretBytes {
        let session = try main.session()
        defer { session.close() }
        let metadata = try WalletMetadata.load(paths)
        let wrapped = try WrappedKeyFile(encoded: Array(FileManager.default.contents(atPath: paths.wrappedKey)!))
        let key = try Wallet.keyOnToken(session, idHex: metadata.agreementKeyID, what: "key-agreement")
        return try wrapped.unwrap(with: TokenUnwrapper(session: session, key: key))
    }

    /// Appends a budget change; the simplest entry that needs no counterparty.
    @discardableResult
    func setBudget(_ category: String, _ limit: String) throws -> LedgerEntry {
        let budget = try Budget(
            category: category, limit: try MoneyText.parse(limit), window: .month, isHardCap: false,
            timeZoneIdentifier: "Europe/Berlin")
        return try wallet!.append { position, previous, time in
            try LedgerEntry(
                position: position, id: .random(), kind: .budgetChange, amount: nil, category: category,
                time: time, payload: BudgetChange.set(budget).payload, previousLink: previous)
        }
    }

    func copyFiles(to directory: String) throws {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.copyItem(atPath: paths.directory, toPath: directory)
    }

    func restoreFiles(from directory: String, only names: [String]) throws {
        for name in names {
            let target = paths.directory + "/" + name
            try? FileManager.default.removeItem(atPath: target)
            if FileManager.default.fileExists(atPath: directory + "/" + name) {
                try FileManager.default.copyItem(atPath: directory + "/" + name, toPath: target)
            }
        }
    }
}

private final class ClockBox: @unchecked Sendable {
    weak var owner: TestWallet?
    init(_ owner: TestWallet) { self.owner = owner }
    var value: Int64 { owner?.now ?? 0 }
}

extension Wallet {
    /// `text` ("5.00 EUR") in the only asset of its currency this wallet holds: the asset a payment moves.
    func asset(_ text: String) throws -> AssetAmount { try asset(for: try MoneyText.parse(text), issuer: nil) }

    /// The balance in euros over every issuer's euros held.
    var euros: Money {
        try! Money(minorUnits: state.minorUnitsHeld(Currency(code: "EUR")!), currency: Currency(code: "EUR")!)
    }
}
