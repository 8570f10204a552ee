import Foundation
import SecureCore
import SecureCrypto

/// Something that can do P-256 ECDH with a private key it holds: a token's key-agreement key. Only the
/// token sees the private key; the store sees the shared secret, for as long as one unwrap takes.
public protocol KeyAgreementUnwrapper {
    /// The public half of the key-agreement key.
    var publicKey: P256.PublicKey { get }
    /// The ECDH shared secret (the x-coordinate, 32 bytes) with an ephemeral public key.
    func sharedSecret(with ephemeral: P256.PublicKey) throws -> SecretBytes
}

/// Something that decrypts RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) with a private key it holds: a
/// token without ECDH (a TPM through tpm2-pkcs11). Only the token sees the private key.
public protocol RSAOAEPUnwrapper {
    /// The public half of the decryption key.
    var rsaPublicKey: RSAPublicKey { get }
    /// The plaintext of an OAEP ciphertext to that key.
    func decryptOAEPSHA256(_ ciphertext: [UInt8]) throws -> SecretBytes
}

/// The database key wrapped to one or more recipients, with what is needed to tell a wrong key from a
/// corrupted or foreign database. The format is in docs/PROTOCOL.md ("Wrapped database key").
public struct WrappedKeyFile: Equatable, Sendable {
    /// File magic and format version.
    static let magic = Array("SECWKEY1".utf8)
    static let version: UInt8 = 1
    /// At most this many recipients: a wallet needs two (token and backup); room for rotation.
    static let recipientCountMax = 8
    /// Bytes of the key-check value.
    static let keyCheckByteCount = 16
    /// Bytes of the SQLCipher salt at the start of the database file.
    public static let saltByteCount = 16

    /// How a recipient unwraps. The type byte lets other token mechanisms (RSA-OAEP on TPMs) be added.
    public enum RecipientType: UInt8, Sendable {
        case p256ECDH = 1
        case rsaOAEP = 2
        case recoverySecret = 3
    }

    /// The copy the recovery words open (type 3): HKDF-SHA256 of the 32-byte recovery secret gives the key
    /// that seals the database key with AES-256-GCM. At most one per file.
    public struct RecoverySecretRecipient: Equatable, Sendable {
        public let nonce: [UInt8]
        /// AES-256-GCM ciphertext of the 32-byte key, with its tag.
        public let sealed: [UInt8]
    }

    /// One copy wrapped to an RSA key (type 2): a random 32-byte seed encrypted with RSA-OAEP, from which
    /// HKDF derives the key that seals the database key with AES-256-GCM, as type 1 does from ECDH.
    public struct RSARecipient: Equatable, Sendable {
        public let recipientKey: RSAPublicKey
        /// RSA-OAEP ciphertext of the seed; exactly as long as the modulus.
        public let encryptedSeed: [UInt8]
        public let nonce: [UInt8]
        /// AES-256-GCM ciphertext of the 32-byte key, with its tag.
        public let sealed: [UInt8]
    }

    /// One wrapped copy of the key.
    public struct Recipient: Equatable, Sendable {
        public let type: RecipientType
        /// The recipient's key-agreement public key.
        public let recipientKey: P256.PublicKey
        /// The ephemeral public key used for this copy.
        public let ephemeralKey: P256.PublicKey
        public let nonce: [UInt8]
        /// AES-256-GCM ciphertext of the 32-byte key, with its tag.
        public let sealed: [UInt8]
    }

    /// The wallet this key belongs to.
    public let walletID: WalletID
    /// HMAC-SHA256(key, "secure-key-check-v1"), first 16 bytes: tells a wrong key from corruption.
    public let keyCheck: [UInt8]
    /// The database file's first 16 bytes (SQLCipher's salt): tells another database from corruption.
    public var databaseSalt: [UInt8]
    public var recipients: [Recipient]
    /// Copies wrapped to RSA keys (type 2); encoded after the P-256 ones, under the same count.
    public var rsaRecipients: [RSARecipient]
    /// The copy the recovery words open (type 3), encoded last; nil for a wallet made without words.
    public var recoverySecretRecipient: RecoverySecretRecipient?

    private var recipientCount: Int {
        recipients.count + rsaRecipients.count + (recoverySecretRecipient == nil ? 0 : 1)
    }

    /// The key-check value of a database key.
    public static func keyCheck(of key: SecretBytes) -> [UInt8] {
        Array(
            HMACSHA256.authenticationCode(key: key, message: Array("secure-key-check-v1".utf8)).prefix(
                keyCheckByteCount))
    }

    /// Starts a file for a new key; recipients are added with `wrap`.
    public init(walletID: WalletID, key: SecretBytes, databaseSalt: [UInt8]) {
        precondition(key.count == 32)
        self.walletID = walletID
        keyCheck = Self.keyCheck(of: key)
        self.databaseSalt = databaseSalt
        recipients = []
        rsaRecipients = []
        recoverySecretRecipient = nil
    }

    /// Wraps the key to a recipient's public key, ECIES style: an ephemeral P-256 key, ECDH, HKDF-SHA256
    /// and AES-256-GCM. It needs only the public key.
    public mutating func wrap(_ key: SecretBytes, to recipientKey: P256.PublicKey) throws {
        guard recipientCount < Self.recipientCountMax else {
            throw StoreError(.malformed, "a wallet key can have at most \(Self.recipientCountMax) recipients")
        }
        let ephemeral = P256.KeyAgreementPrivateKey.generate()
        let shared = try ephemeral.sharedSecret(with: recipientKey)
        let kek = try Self.keyEncryptionKey(
            shared, walletID: walletID, recipient: recipientKey, ephemeral: ephemeral.publicKey)
        let nonce = SystemRandom.bytes(AES256GCM.nonceByteCount)
        let sealed = try key.withUnsafeBytes { bytes in
            try AES256GCM.seal(
                Array(bytes), key: kek, nonce: nonce,
                associatedData: Self.associatedData(
                    walletID: walletID, recipient: recipientKey, ephemeral: ephemeral.publicKey))
        }
        recipients.append(
            Recipient(
                type: .p256ECDH, recipientKey: recipientKey, ephemeralKey: ephemeral.publicKey,
                nonce: nonce, sealed: sealed))
    }

    /// Wraps the key to an RSA public key (type 2): a random seed goes to the key with RSA-OAEP, and the
    /// seed's HKDF output seals the key with AES-256-GCM under the wallet id and the recipient's digest.
    public mutating func wrap(_ key: SecretBytes, to recipientKey: RSAPublicKey) throws {
        guard recipientCount < Self.recipientCountMax else {
            throw StoreError(.malformed, "a wallet key can have at most \(Self.recipientCountMax) recipients")
        }
        let seed = SecretBytes(randomCount: 32)
        let encryptedSeed = try recipientKey.encryptOAEPSHA256(seed)
        let kek = try Self.keyEncryptionKey(seed: seed, walletID: walletID, recipient: recipientKey)
        let nonce = SystemRandom.bytes(AES256GCM.nonceByteCount)
        let sealed = try key.withUnsafeBytes { bytes in
            try AES256GCM.seal(
                Array(bytes), key: kek, nonce: nonce,
                associatedData: Self.associatedData(walletID: walletID, recipient: recipientKey))
        }
        rsaRecipients.append(
            RSARecipient(recipientKey: recipientKey, encryptedSeed: encryptedSeed, nonce: nonce, sealed: sealed))
    }

    /// Wraps the key to the recovery secret (type 3), replacing any earlier such copy.
    public mutating func wrap(_ key: SecretBytes, toRecoverySecret secret: SecretBytes) throws {
        if recoverySecretRecipient == nil, recipientCount >= Self.recipientCountMax {
            throw StoreError(.malformed, "a wallet key can have at most \(Self.recipientCountMax) recipients")
        }
        let kek = try Self.keyEncryptionKey(recoverySecret: secret, walletID: walletID)
        let nonce = SystemRandom.bytes(AES256GCM.nonceByteCount)
        let sealed = try key.withUnsafeBytes { bytes in
            try AES256GCM.seal(
                Array(bytes), key: kek, nonce: nonce, associatedData: Self.recoveryAssociatedData(walletID: walletID))
        }
        recoverySecretRecipient = RecoverySecretRecipient(nonce: nonce, sealed: sealed)
    }

    /// Unwraps the key with the recovery secret. Throws `.wrongKey` when the file holds no copy for recovery
    /// words, or when these words do not open it (another wallet's words, or a key file replaced).
    public func unwrap(recoverySecret secret: SecretBytes) throws -> SecretBytes {
        guard let recipient = recoverySecretRecipient else {
            throw StoreError(
                .wrongKey,
                "the database key is not wrapped to recovery words; this wallet was made without --recovery-words")
        }
        let kek = try Self.keyEncryptionKey(recoverySecret: secret, walletID: walletID)
        do {
            return try openChecked(
                recipient.sealed, kek: kek, nonce: recipient.nonce,
                associatedData: Self.recoveryAssociatedData(walletID: walletID))
        } catch {
            throw StoreError(
                .wrongKey,
                "these recovery words do not open this wallet's database key: they are another wallet's, or a word "
                    + "was replaced by one that still passes the checksum")
        }
    }

    static func keyEncryptionKey(recoverySecret secret: SecretBytes, walletID: WalletID) throws -> SecretBytes {
        let info = DomainLabel.bytes("secure-wrap-recovery-v1") + [version] + walletID.bytes
        return SecretBytes(
            try HKDFSHA256.deriveKey(inputKeyMaterial: secret, salt: [], info: info, outputByteCount: 32))
    }

    static func recoveryAssociatedData(walletID: WalletID) -> [UInt8] {
        DomainLabel.bytes("secure-wrap-v1") + [version, RecipientType.recoverySecret.rawValue] + walletID.bytes
    }

    /// Unwraps the key with the RSA recipient the unwrapper holds, and checks it against the key-check value.
    public func unwrap(with unwrapper: RSAOAEPUnwrapper) throws -> SecretBytes {
        guard let recipient = rsaRecipients.first(where: { $0.recipientKey == unwrapper.rsaPublicKey }) else {
            throw StoreError(
                .wrongKey,
                "the database key is not wrapped to this token's RSA key; "
                    + "is this the wallet's token (or its backup)?")
        }
        let seed = try unwrapper.decryptOAEPSHA256(recipient.encryptedSeed)
        guard seed.count == 32 else {
            throw StoreError(.wrongKey, "the token's RSA-OAEP decryption gave no 32-byte seed")
        }
        let kek = try Self.keyEncryptionKey(seed: seed, walletID: walletID, recipient: recipient.recipientKey)
        return try openChecked(
            recipient.sealed, kek: kek, nonce: recipient.nonce,
            associatedData: Self.associatedData(walletID: walletID, recipient: recipient.recipientKey))
    }

    private func openChecked(_ sealed: [UInt8], kek: SecretBytes, nonce: [UInt8], associatedData: [UInt8]) throws
        -> SecretBytes
    {
        let opened: [UInt8]
        do {
            opened = try AES256GCM.open(sealed, key: kek, nonce: nonce, associatedData: associatedData)
        } catch {
            throw StoreError(
                .wrongKey,
                "the wrapped database key does not open with this token's key; the key file "
                    + "is damaged or belongs to another wallet")
        }
        let key = SecretBytes(opened)
        guard ConstantTime.equal(Self.keyCheck(of: key), keyCheck) else {
            throw StoreError(.wrongKey, "the unwrapped key does not match the key-check value")
        }
        return key
    }

    static func keyEncryptionKey(seed: SecretBytes, walletID: WalletID, recipient: RSAPublicKey) throws -> SecretBytes {
        let info = DomainLabel.bytes("secure-wrap-rsa-v1") + [version] + walletID.bytes + SHA256.hash(recipient.spki)
        return SecretBytes(try HKDFSHA256.deriveKey(inputKeyMaterial: seed, salt: [], info: info, outputByteCount: 32))
    }

    static func associatedData(walletID: WalletID, recipient: RSAPublicKey) -> [UInt8] {
        DomainLabel.bytes("secure-wrap-v1") + [version, RecipientType.rsaOAEP.rawValue] + walletID.bytes
            + SHA256.hash(recipient.spki)
    }

    /// Unwraps the key with whichever recipient the unwrapper holds, and checks it against the key-check
    /// value. Throws `.wrongKey` when no recipient is this unwrapper's key or the key does not check.
    public func unwrap(with unwrapper: KeyAgreementUnwrapper) throws -> SecretBytes {
        guard let recipient = recipients.first(where: { $0.recipientKey == unwrapper.publicKey }) else {
            throw StoreError(
                .wrongKey,
                "the database key is not wrapped to this token's key-agreement key; "
                    + "is this the wallet's token (or its backup)?")
        }
        let shared = try unwrapper.sharedSecret(with: recipient.ephemeralKey)
        let kek = try Self.keyEncryptionKey(
            shared, walletID: walletID, recipient: recipient.recipientKey, ephemeral: recipient.ephemeralKey)
        return try openChecked(
            recipient.sealed, kek: kek, nonce: recipient.nonce,
            associatedData: Self.associatedData(
                walletID: walletID, recipient: recipient.recipientKey,
                ephemeral: recipient.ephemeralKey))
    }

    static func keyEncryptionKey(
        _ shared: SecretBytes, walletID: WalletID, recipient: P256.PublicKey,
        ephemeral: P256.PublicKey
    ) throws -> SecretBytes {
        let info =
            DomainLabel.bytes("secure-wrap-p256-v1") + [version] + walletID.bytes + recipient.x963 + ephemeral.x963
        return SecretBytes(
            try HKDFSHA256.deriveKey(inputKeyMaterial: shared, salt: [], info: info, outputByteCount: 32))
    }

    static func associatedData(walletID: WalletID, recipient: P256.PublicKey, ephemeral: P256.PublicKey) -> [UInt8] {
        DomainLabel.bytes("secure-wrap-v1") + [version, RecipientType.p256ECDH.rawValue] + walletID.bytes
            + recipient.x963 + ephemeral.x963
    }

    // MARK: Encoding

    /// The file's bytes.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(raw: Self.magic)
        writer.write(Self.version)
        writer.write(walletID)
        writer.write(fixed: keyCheck, count: Self.keyCheckByteCount)
        writer.write(fixed: databaseSalt, count: Self.saltByteCount)
        writer.write(UInt8(recipientCount))
        func append(_ type: RecipientType, _ body: [UInt8]) {
            writer.write(type.rawValue)
            writer.write(prefixed16: body, max: Int(UInt16.max))
        }
        for recipient in recipients {
            append(
                recipient.type,
                recipient.recipientKey.x963 + recipient.ephemeralKey.x963 + recipient.nonce + recipient.sealed)
        }
        for recipient in rsaRecipients {
            let key = recipient.recipientKey
            var body = ByteWriter()
            body.write(prefixed16: key.modulus, max: Int(UInt16.max))
            body.write(prefixed8: key.publicExponent, max: Int(UInt8.max))
            body.write(raw: recipient.encryptedSeed + recipient.nonce + recipient.sealed)
            append(.rsaOAEP, body.bytes)
        }
        if let recipient = recoverySecretRecipient { append(.recoverySecret, recipient.nonce + recipient.sealed) }
        return writer.bytes
    }

    /// Parses the file; any deviation from the format is `.malformed`, never a trap.
    public init(encoded bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        func malformed(_ what: String) -> StoreError {
            StoreError(.malformed, "the wrapped-key file is malformed: \(what)")
        }
        guard let magic = reader.readFixed(8), magic == Self.magic else { throw malformed("bad magic") }
        guard let version = reader.readUInt8(), version == Self.version else { throw malformed("unknown version") }
        guard let walletID = reader.read(WalletID.self), let keyCheck = reader.readFixed(Self.keyCheckByteCount),
            let salt = reader.readFixed(Self.saltByteCount), let count = reader.readUInt8()
        else {
            throw malformed("truncated header")
        }
        guard count >= 1, Int(count) <= Self.recipientCountMax else { throw malformed("bad recipient count") }
        var recipients: [Recipient] = []
        var rsaRecipients: [RSARecipient] = []
        var recoverySecretRecipient: RecoverySecretRecipient?
        for _ in 0..<Int(count) {
            guard let typeByte = reader.readUInt8(), let length = reader.readUInt16().map(Int.init) else {
                throw malformed("truncated recipient")
            }
            guard let type = RecipientType(rawValue: typeByte) else {
                throw malformed("unknown recipient type \(typeByte)")
            }
            if type == .rsaOAEP {
                guard let body = reader.readFixed(length) else { throw malformed("truncated recipient") }
                rsaRecipients.append(try Self.decodeRSARecipient(body))
                continue
            }
            if type == .recoverySecret {
                guard recoverySecretRecipient == nil else { throw malformed("two recovery-words recipients") }
                guard length == AES256GCM.nonceByteCount + 48, let body = reader.readFixed(length) else {
                    throw malformed("bad recovery-words recipient length")
                }
                recoverySecretRecipient = RecoverySecretRecipient(
                    nonce: Array(body.prefix(AES256GCM.nonceByteCount)),
                    sealed: Array(body.dropFirst(AES256GCM.nonceByteCount)))
                continue
            }
            guard length == 65 + 65 + 12 + 48, let body = reader.readFixed(length) else {
                throw malformed("bad recipient length")
            }
            do {
                recipients.append(
                    Recipient(
                        type: type, recipientKey: try P256.PublicKey(x963: Array(body[0..<65])),
                        ephemeralKey: try P256.PublicKey(x963: Array(body[65..<130])),
                        nonce: Array(body[130..<142]), sealed: Array(body[142...])))
            } catch {
                throw malformed("a recipient key is not a valid P-256 point")
            }
        }
        guard reader.isAtEnd else { throw malformed("trailing bytes") }
        self.walletID = walletID
        self.keyCheck = keyCheck
        databaseSalt = salt
        self.recipients = recipients
        self.rsaRecipients = rsaRecipients
        self.recoverySecretRecipient = recoverySecretRecipient
    }

    /// A type 2 body: modulus length (2 bytes) and modulus, exponent length (1 byte) and exponent, the
    /// OAEP ciphertext (as long as the modulus), the 12-byte nonce, the 48-byte sealed key.
    private static func decodeRSARecipient(_ body: [UInt8]) throws -> RSARecipient {
        var reader = ByteReader(body)
        func malformed(_ what: String) -> StoreError {
            StoreError(.malformed, "the wrapped-key file is malformed: \(what)")
        }
        guard let modulusLength = reader.readUInt16(), let modulus = reader.readFixed(Int(modulusLength)),
            let exponentLength = reader.readUInt8(), let exponent = reader.readFixed(Int(exponentLength)),
            let encryptedSeed = reader.readFixed(modulus.count), let nonce = reader.readFixed(AES256GCM.nonceByteCount),
            let sealed = reader.readFixed(48), reader.isAtEnd
        else {
            throw malformed("bad RSA recipient length")
        }
        guard modulus.first != 0, exponent.first != 0,
            let key = try? RSAPublicKey(modulus: modulus, publicExponent: exponent)
        else {
            throw malformed("an RSA recipient key is not a valid 2048- to 4096-bit public key")
        }
        return RSARecipient(recipientKey: key, encryptedSeed: encryptedSeed, nonce: nonce, sealed: sealed)
    }
}
