import SecureCore
import SecureCrypto

// TEMPORARY until i17-keys merges; never committed.
extension Wallet {
    public func contactKeyPair() throws -> (publicKey: MLKEM1024.PublicKey, privateKey: MLKEM1024.PrivateKey) {
        let key = try MLKEM1024.PrivateKey(seed: SecretBytes(walletID.bytes + walletID.bytes))
        return (key.publicKey, key)
    }
}
