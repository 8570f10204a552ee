import SecureCrypto

/// What a wallet needs from its token: keys generated on it, signatures and ECDH made on it, private data
/// objects for the anchor, and a PIN that is held only between `unlock` and `lock`. `TokenSession` is the
/// real one (PKCS#11). The simulator's stand-in, too fast for SoftHSM's millions of steps, lives only in
/// SecureTestSupport. Production's only other token is the rehearsal's (`RehearsalToken`, SecureRehearsal),
/// whose in-memory keys sign only inside `SignatureDomain.rehearsal` and never for a real wallet; both keep
/// their keys in `MemoryTokenKeys`.
public protocol WalletToken: AnyObject {
    /// The token's label, for messages.
    var label: String { get }
    /// A URI naming the token (no object attributes).
    var uri: PKCS11URI { get }
    /// Whether a PIN is held and operations can run.
    var isUnlocked: Bool { get }
    /// Logs out and wipes the PIN.
    func lock()
    /// Logs in with a PIN after `lock`.
    func unlock(pin: PIN, confirmFinalTry: Bool) throws
    func generateKey(label: String, usage: KeyUsage) throws -> TokenKey
    /// The one private key a URI names (by id and/or label), with its public key.
    func key(_ uri: PKCS11URI) throws -> TokenKey
    func keys() throws -> [TokenKey]
    /// ECDH with the key on the token; the 32-byte x-coordinate.
    func deriveSharedSecret(key: TokenKey, peer: P256.PublicKey) throws -> [UInt8]
    /// A low-s signature over a SHA-256 digest, verified against the key before it is returned.
    func sign(digest: [UInt8], key: TokenKey) throws -> ECDSASignature
    func dataObjects(application: String) throws -> [(label: String, value: [UInt8])]
    func replaceDataObject(application: String, label: String, value: [UInt8]) throws
    func destroyDataObjects(application: String, label: String) throws
    /// Selects a key that is already on the token (made by the token's own tool), checked like a generated key.
    func selectKey(_ uri: PKCS11URI, usage: KeyUsage) throws -> TokenKey
    /// Whether the token offers P-256 ECDH (CKM_ECDH1_DERIVE).
    var supportsECDH: Bool { get }
    /// Whether the token offers RSA-OAEP decryption, the way to unwrap on tokens without ECDH (a TPM).
    var supportsRSAOAEP: Bool { get }
    func generateRSADecryptionKey(label: String) throws -> TokenRSAKey
    func rsaKeys() throws -> [TokenRSAKey]
    func decryptOAEPSHA256(key: TokenRSAKey, ciphertext: [UInt8]) throws -> SecretBytes
    /// Where a key came from (PIVAttestation.swift): attested, the module's word, or unproven, which is
    /// refused unless the session's policy allows it (`--allow-unproven-origin`).
    func requireOrigin(of key: TokenKey, what: String) throws -> KeyOriginReport
}

/// Defaults for stand-ins that only do P-256 (the simulator's token): no RSA, selection by URI.
extension WalletToken {
    public func selectKey(_ uri: PKCS11URI, usage: KeyUsage) throws -> TokenKey { try key(uri) }
    public var supportsECDH: Bool { true }
    public var supportsRSAOAEP: Bool { false }
    public func generateRSADecryptionKey(label: String) throws -> TokenRSAKey {
        throw TokenError(.unsupported, "the token \"\(self.label)\" has no RSA-OAEP")
    }
    public func rsaKeys() throws -> [TokenRSAKey] { [] }
    /// A stand-in's keys are its own software keys: the module's word is all there is.
    public func requireOrigin(of key: TokenKey, what: String) throws -> KeyOriginReport { .modulesWord }
    public func decryptOAEPSHA256(key: TokenRSAKey, ciphertext: [UInt8]) throws -> SecretBytes {
        throw TokenError(.unsupported, "the token \"\(self.label)\" has no RSA-OAEP")
    }
}

extension TokenSession: WalletToken {
    public var label: String { token.label }
    public var uri: PKCS11URI { token.uri }
    public var supportsECDH: Bool { token.supportsECDH }
    public var supportsRSAOAEP: Bool { token.supportsRSAOAEP }
}
