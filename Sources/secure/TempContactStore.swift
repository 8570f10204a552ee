// TEMPORARY until i17-store merges; never committed.
import SecureCore
import SecureCrypto
import SecureWallet

enum ContactVerification { case verified, unconfirmed }
struct ContactRecord {
    var walletID: WalletID { .zero }
    var name: String { "" }
    var addedAt: Int64 { 0 }
    static func validateName(_ name: String) throws {}
    init(
        walletID: WalletID, log: KeyEventLog, contactKey: [UInt8], name: String, addedAt: Int64,
        verification: ContactVerification, rangingSource: RangingSource, medianMillimetres: UInt32,
        trustedIssuers: [WalletID]
    ) throws {}
}
extension Wallet {
    func contact(named: String) throws -> ContactRecord? { nil }
    func contacts() throws -> [ContactRecord] { [] }
    func contactSecret(walletID: WalletID) throws -> SecretBytes { SecretBytes([]) }
    func contact(walletID: WalletID) throws -> ContactRecord? { nil }
    func addContact(_ r: ContactRecord, secret: SecretBytes) throws {}
    func replaceContact(_ r: ContactRecord, with: ContactRecord, secret: SecretBytes) throws {}
}
