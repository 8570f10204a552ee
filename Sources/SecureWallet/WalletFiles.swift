import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// Where a wallet's files live: `--wallet DIR`, or `$XDG_DATA_HOME/secure/wallet` (by default
/// `~/.local/share/secure/wallet`). The file anchor, when allowed, lives in the state folder
/// (`$XDG_STATE_HOME/secure/<wallet id>/anchor`).
public struct WalletPaths: Sendable {
    public let directory: String
    public var metadata: String { directory + "/wallet.json" }
    public var wrappedKey: String { directory + "/keys.bin" }
    public var database: String { directory + "/ledger.db" }
    public var lock: String { directory + "/lock" }

    public init(directory: String?) {
        if let directory {
            self.directory =
                directory.hasPrefix("/") ? directory : FileManager.default.currentDirectoryPath + "/" + directory
        } else {
            self.directory = Self.xdg("XDG_DATA_HOME", fallback: ".local/share") + "/secure/wallet"
        }
    }

    /// Refuses a wallet whose folder or wallet.json another user owns or others may write (group or world
    /// write): wallet.json names the PKCS#11 module `secure` loads, so whoever can write it, or replace it
    /// in the folder, runs code as the person who opens the wallet, before any PIN. The same rule ssh applies
    /// to ~/.ssh and `secure` to its config file. Root's files are trusted (root can do anything anyway).
    public func checkPermissions() throws {
        for (path, what) in [(directory, "wallet folder"), (metadata, "wallet.json")] {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            if status.st_mode & S_IFMT == S_IFLNK {
                // A symlinked wallet folder is fine when its target passes; wallet.json must be a plain file.
                guard path == directory, stat(path, &status) == 0 else {
                    throw StoreError(.unsafePermissions, "\(path) is a symbolic link; the \(what) must be a plain file")
                }
            }
            guard status.st_uid == getuid() || status.st_uid == 0 else {
                throw StoreError(
                    .unsafePermissions,
                    "the \(what) \(path) belongs to user \(status.st_uid), not to you; a wallet is opened only "
                        + "from your own files (wallet.json names the module that is loaded)")
            }
            guard status.st_mode & 0o022 == 0 else {
                throw StoreError(
                    .unsafePermissions,
                    "others may write the \(what) \(path); run `chmod go-w \(path)` (wallet.json names the module "
                        + "that is loaded)")
            }
        }
    }

    /// The file anchor's path for a wallet id.
    public static func fileAnchor(walletID: WalletID) -> String {
        xdg("XDG_STATE_HOME", fallback: ".local/state") + "/secure/\(walletID.hex)/anchor"
    }

    private static func xdg(_ variable: String, fallback: String) -> String {
        let environment = ProcessInfo.processInfo.environment
        if let value = environment[variable], value.hasPrefix("/") { return value }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/" + fallback
    }
}

/// The wallet's plain metadata (`wallet.json`): what is needed before the database can be opened. It is
/// not trusted for anything the ledger proves: the keys it names are checked against the signed key
/// event in entry 0. The format is in docs/PROTOCOL.md ("Wallet files").
public struct WalletMetadata: Codable, Equatable, Sendable {
    public static let currentFormat = 2

    public var format: Int
    /// Hex of the wallet id (SHA-256 of the inception event).
    public var walletID: String
    /// The token URI recorded at init, without PIN attributes.
    public var token: String
    /// Hex CKA_IDs of the signing and key-agreement keys on that token.
    public var signingKeyID: String
    public var agreementKeyID: String
    /// "token" or "file".
    public var anchor: String
    /// The backup token's URI (without PIN), if the backup recipient is a token.
    public var backupToken: String?
    /// The token safeguards given up ("unenforced-pin", "unproven-origin"), repeated from the ledger's signed
    /// `settings` entries for a reader of this file; the entries decide. Absent in files written before it.
    public var allow: [String]?

    /// The wallet id parsed from its hex; throws when the text is not hex of 32 bytes.
    public func parsedWalletID() throws -> WalletID {
        guard let id = WalletID(hex: walletID) else { throw StoreError(.malformed, "wallet.json has a bad wallet id") }
        return id
    }

    static func load(_ paths: WalletPaths) throws -> WalletMetadata {
        try paths.checkPermissions()
        guard let data = FileManager.default.contents(atPath: paths.metadata) else {
            throw StoreError(
                .walletMissing,
                "no wallet at \(paths.directory) (no wallet.json); make one with "
                    + "`secure wallet init`, or pass --wallet DIR")
        }
        let metadata: WalletMetadata
        do {
            metadata = try JSONDecoder().decode(WalletMetadata.self, from: data)
        } catch {
            throw StoreError(.malformed, "\(paths.metadata) is not a valid wallet.json: \(error)")
        }
        guard metadata.format >= currentFormat else {
            // Signed history cannot be rewritten, and mapping its plain amounts onto some issuer would let
            // money from an untrusted issuer in: such a wallet is refused, never migrated.
            throw StoreError(
                .schemaOutdated,
                "\(paths.metadata) has format \(metadata.format): the wallet was made before money was counted per "
                    + "issuer (assets), and its signed history cannot be rewritten. This secure refuses it; keep the "
                    + "folder for its audit trail and make a new wallet (docs/THREAT-MODEL.md, \"Sound money\")")
        }
        guard metadata.format == currentFormat else {
            throw StoreError(
                .schemaTooNew, "\(paths.metadata) has format \(metadata.format); this secure reads \(currentFormat)")
        }
        guard WalletID(hex: metadata.walletID) != nil else {
            throw StoreError(.malformed, "\(paths.metadata) has a bad wallet id")
        }
        return metadata
    }

    func save(_ paths: WalletPaths) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try DurableFile.write(Array(try encoder.encode(self)) + [0x0a], to: paths.metadata)
    }
}

/// The token's key-agreement key as the store's unwrapper: ECDH happens on the token.
struct TokenUnwrapper: KeyAgreementUnwrapper {
    let session: WalletToken
    let key: TokenKey

    var publicKey: P256.PublicKey { key.publicKey }

    func sharedSecret(with ephemeral: P256.PublicKey) throws -> SecretBytes {
        var secret = try session.deriveSharedSecret(key: key, peer: ephemeral)
        defer { secret.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
        return SecretBytes(secret)
    }
}

/// A token's RSA key as the store's unwrapper, for tokens without ECDH: RSA-OAEP happens on the token.
struct TokenRSAUnwrapper: RSAOAEPUnwrapper {
    let session: WalletToken
    let key: TokenRSAKey

    var rsaPublicKey: RSAPublicKey { key.publicKey }

    func decryptOAEPSHA256(_ ciphertext: [UInt8]) throws -> SecretBytes {
        try session.decryptOAEPSHA256(key: key, ciphertext: ciphertext)
    }
}

/// A key-agreement key on a token, by how it unwraps: P-256 ECDH, or RSA-OAEP where the token has no ECDH.
enum AgreementKey {
    case ecdh(TokenKey)
    case rsa(TokenRSAKey)

    /// Makes one on a token: ECDH where the token offers it, else RSA-OAEP, else the token is refused.
    static func generate(on session: WalletToken, label: String) throws -> AgreementKey {
        if session.supportsECDH { return .ecdh(try session.generateKey(label: label, usage: .derive)) }
        if session.supportsRSAOAEP { return .rsa(try session.generateRSADecryptionKey(label: label)) }
        throw TokenError(
            .unsupported,
            "the token \"\(session.label)\" offers neither ECDH (CKM_ECDH1_DERIVE) nor "
                + "RSA-OAEP decryption (CKM_RSA_PKCS_OAEP), so it cannot unwrap the database key")
    }

    /// Adds a copy of the database key for this key.
    func wrap(_ databaseKey: SecretBytes, into file: inout WrappedKeyFile) throws {
        switch self {
        case .ecdh(let key): try file.wrap(databaseKey, to: key.publicKey)
        case .rsa(let key): try file.wrap(databaseKey, to: key.publicKey)
        }
    }

    /// Unwraps the database key on the token.
    func unwrap(_ file: WrappedKeyFile, session: WalletToken) throws -> SecretBytes {
        switch self {
        case .ecdh(let key): return try file.unwrap(with: TokenUnwrapper(session: session, key: key))
        case .rsa(let key): return try file.unwrap(with: TokenRSAUnwrapper(session: session, key: key))
        }
    }

    /// The key among a token's keys that a file's recipients name, if any.
    static func find(in file: WrappedKeyFile, on session: WalletToken) throws -> AgreementKey? {
        let ecRecipients = Set(file.recipients.map(\.recipientKey))
        if let key = try session.keys().first(where: { ecRecipients.contains($0.publicKey) }) { return .ecdh(key) }
        guard !file.rsaRecipients.isEmpty, session.supportsRSAOAEP else { return nil }
        let rsaRecipients = file.rsaRecipients.map(\.recipientKey)
        return try session.rsaKeys().first(where: { rsaRecipients.contains($0.publicKey) }).map { .rsa($0) }
    }
}

/// The anchor as a private CKO_DATA object on the wallet's token.
final class TokenAnchor: AnchorStorage {
    static let application = "secure-wallet"
    let session: WalletToken
    let label: String

    init(session: WalletToken, walletID: WalletID) {
        self.session = session
        label = "anchor-" + walletID.hex
    }

    var kind: String { "token" }

    func load() throws -> [UInt8]? {
        let objects = try session.dataObjects(application: Self.application).filter { $0.label == label }
        // After a crash between creating the new object and destroying the old, both exist: the
        // larger checkpoint is the newer one, and the wallet checks it extends the database anyway.
        return objects.map(\.value).max {
            (try? SignedCheckpoint.decode($0))??.checkpoint.size ?? 0
                < (try? SignedCheckpoint.decode($1))??.checkpoint.size ?? 0
        }
    }

    func store(_ bytes: [UInt8]) throws {
        try session.replaceDataObject(application: Self.application, label: label, value: bytes)
    }

    /// Removes the anchor object, after the ledger moved to a file anchor by a signed entry: while it
    /// exists, it decides (see `Wallet.findAnchor`).
    func destroy() throws {
        try session.destroyDataObjects(application: Self.application, label: label)
    }
}
