// TEMPORARY until i17-store merges; never committed.
import SecureCore
import SecureCrypto
import SecureWallet

enum ContactVerification { case verified, unconfirmed }
struct ContactRecord {
    static func validateName(_ name: String) throws {}
    init(
        walletID: WalletID, log: KeyEventLog, contactKey: [UInt8], name: String, addedAt: Int64,
        verification: ContactVerification, rangingSource: RangingSource, medianMillimetres: UInt32,
        trustedIssuers: [WalletID]
    ) throws {}
}
extension Wallet {
    func contact(named: String) throws -> ContactRecord? { nil }
    func contact(walletID: WalletID) throws -> ContactRecord? { nil }
    func addContact(_ r: ContactRecord, secret: SecretBytes) throws {}
    func replaceContact(_ r: ContactRecord, with: ContactRecord, secret: SecretBytes) throws {}
}
