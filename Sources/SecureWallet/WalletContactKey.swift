import SecureCore
import SecureCrypto
import SecureStore

/// The wallet's long-term ML-KEM-1024 contact key: the key contacts encapsulate to. Each key event (version 3)
/// names the SHA-256 of the contact key it puts in force, so the key-event log commits to it and a rotation
/// replaces it. Its private half exists only as a fresh random 64-byte seed d ‖ z (FIPS 203 key generation
/// from a seed), kept in the wallet's SQLCipher database under the event's sequence and written in the same
/// transaction as the event's entry: the seed is sealed under the database key, which is wrapped to the
/// wallet's token, the backup token and the recovery words, so every way to open the ledger opens it and
/// nothing else does (docs/THREAT-MODEL.md, "Contact keys").
extension Wallet {
    /// A fresh contact key for a new key event: its seed, in wiped-on-release memory, and the digest the event
    /// records.
    static func newContactKey() -> (seed: SecretBytes, digest: Digest32) {
        let seed = SecretBytes(randomCount: LedgerStore.contactKeySeedByteCount)
        // A 64-byte seed always makes a key; the private key is released (and wiped) when this returns.
        let key = try! MLKEM1024.PrivateKey(seed: seed)
        return (seed, KeyEvent.contactKeyDigest(of: key.publicKey))
    }

    /// The contact key pair the key event in force names, made again from its stored seed and checked against
    /// the event's digest. The private key holds its seed and ŝ in wiped-on-release memory; drop it as soon
    /// as the decapsulation is done.
    ///
    /// Throws `WalletError` `.noContactKey` when the event in force names no contact key (a wallet made, or
    /// last rotated, before contact keys: one rotation gives it one), and `.verificationFailed` when the seed
    /// is missing or does not make the key the event names (the database was altered or damaged).
    public func contactKeyPair() throws -> (publicKey: MLKEM1024.PublicKey, privateKey: MLKEM1024.PrivateKey) {
        let privateKey = try contactPrivateKey(for: keyEvent.event)
        return (privateKey.publicKey, privateKey)
    }

    /// The contact public key in force, or nil when the event in force names none (see `contactKeyPair()`).
    /// Throws when the stored seed is missing or is not the key the event names.
    public var contactPublicKey: MLKEM1024.PublicKey? {
        get throws {
            guard keyEvent.event.hasContactKey else { return nil }
            return try contactKeyPair().publicKey
        }
    }

    /// The private contact key of `event` (the one in force, or an older one kept by sequence), checked
    /// against the digest the event names.
    func contactPrivateKey(for event: KeyEvent) throws -> MLKEM1024.PrivateKey {
        guard event.hasContactKey else {
            throw WalletError(
                .noContactKey,
                "this wallet's key event \(event.sequence) names no contact key: the wallet was made, or last "
                    + "rotated, by a secure that did not make contact keys. Rotate once to get one: `secure keys "
                    + "rotate --backup-token URI` (the rotation's key events each put a new contact key in force)")
        }
        guard let seed = try store.contactKeySeed(sequence: event.sequence) else {
            throw WalletError(
                .verificationFailed,
                "the seed of key event \(event.sequence)'s contact key is missing from the ledger database: the "
                    + "database was altered or damaged. Run `secure ledger verify`, and restore the wallet folder "
                    + "from a good backup")
        }
        guard seed.count == LedgerStore.contactKeySeedByteCount, let key = try? MLKEM1024.PrivateKey(seed: seed),
            KeyEvent.contactKeyDigest(of: key.publicKey) == event.contactKeyDigest
        else {
            throw WalletError(
                .verificationFailed,
                "the stored seed of key event \(event.sequence)'s contact key does not make the key that event "
                    + "names (SHA-256 \(event.contactKeyDigest)): the database was altered or damaged. Run `secure "
                    + "ledger verify`, and restore the wallet folder from a good backup")
        }
        return key
    }
}
