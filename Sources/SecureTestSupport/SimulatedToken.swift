import SecureCore
import SecureCrypto
import SecureToken
import SecureWallet

/// TEST SUPPORT ONLY. A PKCS#11 token stand-in for the deterministic simulator: keys are software keys in
/// process memory (`SoftwareSigner`, `P256.KeyAgreementPrivateKey`), so a simulation can run millions of
/// wallet steps that would take SoftHSM hours. It keeps the token's rules that the wallet relies on: every
/// key and private-object operation needs a login (`unlock`), and `lock` logs out. Private data objects
/// (the anchor) live on the token and survive a crash of the wallet process, as on a real token.
///
/// Faults come from `faultPlan`, which the simulator answers from its seeded generator before each
/// operation: a wrong or locked PIN at login, a token pulled out (CKR_DEVICE_REMOVED) or a session lost
/// (CKR_SESSION_HANDLE_INVALID) at any operation, and a slow token (the simulated clock moves on).
public final class SimulatedToken: WalletToken {
    /// The operations a fault can be injected into.
    public enum Operation: String, Sendable, CaseIterable {
        case unlock, generateKey, findKey, listKeys, derive, sign, readObjects, writeObject, destroyObjects
    }

    /// What goes wrong in one operation.
    public enum Fault: Sendable, Equatable {
        /// The person typed a wrong PIN (login only): CKR_PIN_INCORRECT, and the PIN is discarded.
        case wrongPIN
        /// The PIN is locked after too many wrong tries (login only): CKR_PIN_LOCKED.
        case pinLocked
        /// The token was pulled out: CKR_DEVICE_REMOVED; the login is lost.
        case deviceRemoved
        /// The session died under us: CKR_SESSION_HANDLE_INVALID; the login is lost.
        case sessionHandleInvalid
        /// The operation succeeds but takes this long on the simulated clock.
        case slow(milliseconds: Int64)
    }

    /// The keys and data objects, in memory (shared with production's rehearsal token).
    private let store: MemoryTokenKeys
    public var label: String { store.label }
    public var uri: PKCS11URI { store.uri }
    /// Decides each operation's fault, from the simulator's seeded generator; nil means no faults.
    public var faultPlan: ((Operation) -> Fault?)?
    /// Called with the milliseconds a slow operation takes, so the simulator's clock moves on.
    public var onSlow: ((Int64) -> Void)?
    /// The private data objects: (application, label, value). Public so that the simulator can clone a
    /// token's objects, the attack where both the database and the anchor are restored from a backup.
    public var objects: [(application: String, label: String, value: [UInt8])] {
        get { store.objects }
        set { store.objects = newValue }
    }
    /// How many operations ran, and how many faults were injected, by kind (for the run's report).
    public private(set) var operationCount = 0
    public private(set) var faultCount = 0
    private var loggedIn = false

    /// A token with no keys.
    public init(label: String) {
        store = MemoryTokenKeys(label: label, makeSigningKey: { try SoftwareSigner() })
    }

    public var isUnlocked: Bool { loggedIn }

    public func lock() { loggedIn = false }

    public func unlock(pin: PIN, confirmFinalTry: Bool) throws {
        switch try begin(.unlock, needsLogin: false) {
        case .wrongPIN?:
            pin.discard()
            throw TokenError(
                .pinIncorrect, "the token \"\(label)\" refused the PIN; enter it again",
                returnValueName: "CKR_PIN_INCORRECT")
        case .pinLocked?:
            pin.discard()
            throw TokenError(
                .pinLocked, "the token \"\(label)\" has locked its PIN; unblock it with the SO PIN",
                returnValueName: "CKR_PIN_LOCKED")
        case nil, .deviceRemoved?, .sessionHandleInvalid?, .slow?:
            loggedIn = true
        }
    }

    public func generateKey(label keyLabel: String, usage: KeyUsage) throws -> TokenKey {
        _ = try begin(.generateKey, needsLogin: true)
        return try store.generateKey(label: keyLabel, usage: usage)
    }

    public func key(_ wanted: PKCS11URI) throws -> TokenKey {
        _ = try begin(.findKey, needsLogin: false)
        return try store.key(wanted)
    }

    public func keys() throws -> [TokenKey] {
        _ = try begin(.listKeys, needsLogin: false)
        return store.keys
    }

    public func deriveSharedSecret(key: TokenKey, peer: P256.PublicKey) throws -> [UInt8] {
        _ = try begin(.derive, needsLogin: true)
        return try store.deriveSharedSecret(key: key, peer: peer)
    }

    public func sign(digest: [UInt8], key: TokenKey) throws -> ECDSASignature {
        _ = try begin(.sign, needsLogin: true)
        return try store.sign(digest: digest, key: key)
    }

    public func dataObjects(application: String) throws -> [(label: String, value: [UInt8])] {
        _ = try begin(.readObjects, needsLogin: true)
        return store.dataObjects(application: application)
    }

    public func replaceDataObject(application: String, label objectLabel: String, value: [UInt8]) throws {
        _ = try begin(.writeObject, needsLogin: true)
        store.replaceDataObject(application: application, label: objectLabel, value: value)
    }

    public func destroyDataObjects(application: String, label objectLabel: String) throws {
        _ = try begin(.destroyObjects, needsLogin: true)
        store.destroyDataObjects(application: application, label: objectLabel)
    }

    /// Counts the operation, asks the plan for a fault, and throws the faults that end it. Returns the
    /// login faults, which only `unlock` acts on.
    private func begin(_ operation: Operation, needsLogin: Bool) throws -> Fault? {
        operationCount += 1
        let fault = faultPlan?(operation)
        if fault != nil { faultCount += 1 }
        switch fault {
        case .deviceRemoved?:
            loggedIn = false
            throw TokenError(
                .tokenRemoved, "the token \"\(label)\" was removed; insert it and try again",
                returnValueName: "CKR_DEVICE_REMOVED")
        case .sessionHandleInvalid?:
            loggedIn = false
            throw TokenError(
                .tokenRemoved, "the session with \"\(label)\" was lost; try again",
                returnValueName: "CKR_SESSION_HANDLE_INVALID")
        case .slow(let milliseconds)?:
            onSlow?(milliseconds)
        case nil, .wrongPIN?, .pinLocked?:
            break
        }
        if needsLogin && !loggedIn {
            throw TokenError(
                .pinUnavailable, "the token \"\(label)\" is locked; the operation needs the PIN",
                returnValueName: "CKR_USER_NOT_LOGGED_IN")
        }
        return operation == .unlock ? fault : nil
    }
}

extension SoftwareSigner: MemorySigningKey {}
