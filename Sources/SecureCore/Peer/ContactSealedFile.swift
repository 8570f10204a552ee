import SecureCrypto

/// A file sealed to one contact under the pair's file key (docs/PROTOCOL.md, "Contacts → Sealed files"): a
/// transfer sent by file to a contact reads as noise to anyone else who sees the file (a mail server, a
/// shared folder), and the contact knows whom it came from before reading it.
///
/// `"SECSEAL1"` ‖ version u8 (1) ‖ key id (16) ‖ nonce (12) ‖ AES-256-GCM(file key, nonce, content,
/// associated data = everything before the ciphertext ‖ the recipient's wallet id). The key id is
/// HMAC-SHA256(file key, "secure-contact-file-id-v1" 0x00 ‖ nonce) cut to 16 bytes: the recipient finds the
/// contact by trying each contact's file key, and two files to the same contact share nothing an observer
/// could link. The recipient's wallet id in the associated data means a file cannot be reflected to its
/// sender, although both hold the same key.
public struct ContactSealedFile: Equatable, Sendable {
    static let magic = Array("SECSEAL1".utf8)
    /// The version byte.
    public static let version: UInt8 = 1
    static let keyIDLabel = DomainLabel.bytes("secure-contact-file-id-v1")
    /// The largest sealed content: a transfer file is a few kilobytes; a key-event log of many rotations
    /// makes it larger, never near this.
    public static let contentByteCountMax = 4 << 20
    static let headerByteCount = 8 + 1 + 16 + AES256GCM.nonceByteCount

    /// The whole sealed file.
    public let encoded: [UInt8]

    /// Whether `bytes` begin as a sealed file does (so a reader knows to open it, not to parse it).
    public static func isSealed(_ bytes: [UInt8]) -> Bool { bytes.starts(with: magic) }

    /// Seals `content` for the contact whose pairwise file key is `fileKey` and whose wallet id is `recipient`.
    public static func seal(
        _ content: [UInt8], fileKey: SecretBytes, recipient: WalletID, nonce: [UInt8] = SystemRandom.bytes(12)
    ) throws -> ContactSealedFile {
        precondition(content.count <= contentByteCountMax, "a sealed file's content over the limit")
        precondition(nonce.count == AES256GCM.nonceByteCount)
        let header = magic + [version] + keyID(fileKey: fileKey, nonce: nonce) + nonce
        let sealed = try AES256GCM.seal(
            content, key: fileKey, nonce: nonce, associatedData: header + recipient.bytes)
        return ContactSealedFile(encoded: header + sealed)
    }

    /// Whether this file was sealed under `fileKey` (its key id matches), compared in constant time.
    public static func isFor(_ bytes: [UInt8], fileKey: SecretBytes) -> Bool {
        guard bytes.count >= headerByteCount, isSealed(bytes) else { return false }
        let nonce = Array(bytes[25..<headerByteCount])
        return ConstantTime.equal(bytes[9..<25], keyID(fileKey: fileKey, nonce: nonce))
    }

    /// Opens a sealed file with the file key its key id matched, as the recipient `recipient`.
    public static func open(_ bytes: [UInt8], fileKey: SecretBytes, recipient: WalletID) throws -> [UInt8] {
        guard bytes.count >= headerByteCount + AES256GCM.tagByteCount, isSealed(bytes) else {
            throw FormatError(.invalidValue, "the sealed file is truncated")
        }
        guard bytes[8] == version else {
            throw FormatError(.unsupportedVersion, "sealed file version \(bytes[8]) is not \(version)")
        }
        guard bytes.count - headerByteCount - AES256GCM.tagByteCount <= contentByteCountMax else {
            throw FormatError(.fieldTooLong, "a sealed file over \(contentByteCountMax) bytes")
        }
        let header = Array(bytes[..<headerByteCount])
        do {
            return try AES256GCM.open(
                Array(bytes[headerByteCount...]), key: fileKey, nonce: Array(bytes[25..<headerByteCount]),
                associatedData: header + recipient.bytes)
        } catch {
            throw FormatError(.invalidValue, "the sealed file does not open: altered, or not sealed to this wallet")
        }
    }

    static func keyID(fileKey: SecretBytes, nonce: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: fileKey, message: keyIDLabel + nonce).prefix(16))
    }
}
