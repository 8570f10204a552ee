import SecureCore
import SecureCrypto

/// What a wallet keeps of each issuer's clearing (schema 6): the latest cosignature of its own checkpoint and
/// the clearing's list as its increments. Every row is signed by the clearing, directly (the cosignature) or
/// through the chain of the list head it carries (the increments), so the caller checks both again as it
/// reads them (`Wallet.clearingList(issuer:)`).
extension LedgerStore {
    /// Keeps `cosignature` as the latest of `issuer`'s clearing, `listHead` as the signed tree head its list now
    /// checks against, and appends `increments` (versions `fromVersion` onwards) to the list, in one
    /// transaction. The caller verified all three.
    public func storeClearingAnswer(
        issuer: WalletID, cosignature: [UInt8], listHead: [UInt8], increments: [[UInt8]], fromVersion: UInt64
    ) throws {
        try database.transaction {
            try database.prepare(
                "INSERT OR REPLACE INTO clearing_cosignatures (issuer, encoded, list_head) VALUES (?, ?, ?)"
            ).bind([.blob(issuer.bytes), .blob(cosignature), .blob(listHead)]).run()
            for (offset, increment) in increments.enumerated() {
                try database.prepare("INSERT INTO clearing_list (issuer, version, encoded) VALUES (?, ?, ?)")
                    .bind([.blob(issuer.bytes), .integer(Int64(fromVersion) + Int64(offset)), .blob(increment)]).run()
            }
        }
    }

    /// The latest cosignature kept for `issuer`'s clearing and the signed tree head its list checks against,
    /// still encoded.
    public func clearingCosignature(issuer: WalletID) throws -> (cosignature: [UInt8], listHead: [UInt8])? {
        let statement = try database.prepare(
            "SELECT encoded, list_head FROM clearing_cosignatures WHERE issuer = ?"
        ).bind([.blob(issuer.bytes)])
        return try statement.step() ? (statement.blob(0), statement.blob(1)) : nil
    }

    /// The list increments kept for `issuer`'s clearing in version order, from version 1. A gap in the
    /// versions is a damaged table.
    public func clearingListIncrements(issuer: WalletID) throws -> [[UInt8]] {
        let statement = try database.prepare(
            "SELECT version, encoded FROM clearing_list WHERE issuer = ? ORDER BY version"
        ).bind([.blob(issuer.bytes)])
        var increments: [[UInt8]] = []
        while try statement.step() {
            guard statement.integer(0) == Int64(increments.count) + 1 else {
                throw StoreError(
                    .corrupted, "the clearing list of issuer \(issuer.hex) misses version \(increments.count + 1)")
            }
            increments.append(statement.blob(1))
        }
        return increments
    }
}
