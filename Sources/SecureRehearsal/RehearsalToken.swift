import SecureCore
import SecureCrypto
import SecureToken

/// The token of a rehearsal wallet (docs/TILL.md §4.1): ephemeral P-256 keys in process memory
/// (`RehearsalKey`, `MemoryTokenKeys`), made for one rehearsal and gone with it. It is production's second
/// software signing key after `RecoveryKey`, and it cannot sign for a real wallet: its keys are in no real
/// wallet's key-event log, and it signs only inside `SignatureDomain.rehearsal` (a precondition), where every
/// digest carries the rehearsal label that no real verification uses (docs/THREAT-MODEL.md).
///
/// Its PIN is `RehearsalToken.pin` ("0000"). The rehearsal file can make it refuse whatever is typed (a wrong
/// PIN, or a locked one) and can pull it out from a step on (`removed`): every later operation then fails with
/// CKR_DEVICE_REMOVED, as a real token's would.
public final class RehearsalToken: WalletToken {
    /// The rehearsal PIN: the only PIN a rehearsal token takes.
    public static let pin = "0000"

    private let store: MemoryTokenKeys
    private var loggedIn = false
    /// How logins are answered, from entry `pinAnswerFromEntry` on (earlier logins take the rehearsal PIN).
    public var pinAnswer: RehearsalPIN = .right
    public var pinAnswerFromEntry = 1
    /// Logins tried so far (PIN entries).
    public private(set) var entries = 0
    /// The token was pulled out: every operation fails from now on.
    public var removed = false
    /// How many logins were refused (for the rehearsal's ending).
    public private(set) var refusedLogins = 0

    /// An empty token named `label`.
    public init(label: String) {
        store = MemoryTokenKeys(label: label, makeSigningKey: { try RehearsalKey() })
    }

    /// Starts counting PIN entries (and refusals) afresh: the rehearsal's setup logins are not the person's.
    public func resetPINEntries() {
        entries = 0
        refusedLogins = 0
    }

    public var label: String { store.label }
    public var uri: PKCS11URI { store.uri }
    public var isUnlocked: Bool { loggedIn && !removed }

    public func lock() { loggedIn = false }

    public func unlock(pin: PIN, confirmFinalTry: Bool) throws {
        try checkPresent()
        entries += 1
        switch entries >= pinAnswerFromEntry ? pinAnswer : .right {
        case .right where MemoryTokenKeys.pin(pin, is: Self.pin):
            loggedIn = true
        case .right, .wrong:
            pin.discard()
            refusedLogins += 1
            throw TokenError(
                .pinIncorrect, "the rehearsal token \"\(label)\" refused the PIN (the rehearsal PIN is \(Self.pin))",
                returnValueName: "CKR_PIN_INCORRECT")
        case .locked:
            pin.discard()
            refusedLogins += 1
            throw TokenError(
                .pinLocked, "the rehearsal token \"\(label)\" has locked its PIN (as the rehearsal file says)",
                returnValueName: "CKR_PIN_LOCKED")
        }
    }

    public func generateKey(label keyLabel: String, usage: KeyUsage) throws -> TokenKey {
        try checkLoggedIn()
        return try store.generateKey(label: keyLabel, usage: usage)
    }

    public func key(_ wanted: PKCS11URI) throws -> TokenKey {
        try checkPresent()
        return try store.key(wanted)
    }

    public func keys() throws -> [TokenKey] {
        try checkPresent()
        return store.keys
    }

    public func deriveSharedSecret(key: TokenKey, peer: P256.PublicKey) throws -> [UInt8] {
        try checkLoggedIn()
        return try store.deriveSharedSecret(key: key, peer: peer)
    }

    public func sign(digest: [UInt8], key: TokenKey) throws -> ECDSASignature {
        precondition(SignatureDomain.isRehearsal, "a rehearsal token signs only inside SignatureDomain.rehearsal")
        try checkLoggedIn()
        return try store.sign(digest: digest, key: key)
    }

    public func dataObjects(application: String) throws -> [(label: String, value: [UInt8])] {
        try checkLoggedIn()
        return store.dataObjects(application: application)
    }

    public func replaceDataObject(application: String, label objectLabel: String, value: [UInt8]) throws {
        try checkLoggedIn()
        store.replaceDataObject(application: application, label: objectLabel, value: value)
    }

    public func destroyDataObjects(application: String, label objectLabel: String) throws {
        try checkLoggedIn()
        store.destroyDataObjects(application: application, label: objectLabel)
    }

    private func checkPresent() throws {
        guard !removed else {
            loggedIn = false
            throw TokenError(
                .tokenRemoved, "the rehearsal token \"\(label)\" was removed (as the rehearsal file says)",
                returnValueName: "CKR_DEVICE_REMOVED")
        }
    }

    private func checkLoggedIn() throws {
        try checkPresent()
        guard loggedIn else {
            throw TokenError(
                .pinUnavailable, "the rehearsal token \"\(label)\" is locked; the operation needs the PIN",
                returnValueName: "CKR_USER_NOT_LOGGED_IN")
        }
    }
}
