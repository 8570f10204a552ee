import Foundation
import SecureCrypto

/// What a token's flags say about its user PIN. PKCS#11 exposes no retry count, only these flags.
public enum PINState: String, Sendable, Codable {
    case ok
    case countLow = "count-low"
    case finalTry = "final-try"
    case locked
    case notInitialized = "not-initialized"
    case notRequired = "not-required"

    init(flags: UInt) {
        if flags & TokenFlag.loginRequired == 0 {
            self = .notRequired
        } else if flags & TokenFlag.userPINLocked != 0 {
            self = .locked
        } else if flags & TokenFlag.userPINFinalTry != 0 {
            self = .finalTry
        } else if flags & TokenFlag.userPINCountLow != 0 {
            self = .countLow
        } else if flags & TokenFlag.userPINInitialized == 0 {
            self = .notInitialized
        } else {
            self = .ok
        }
    }

    /// Checks that a login may be attempted: never on a locked PIN, and on the final try only when the
    /// user confirmed it explicitly.
    public func permitsLogin(confirmedFinalTry: Bool, tokenLabel: String, unblockAdvice: String? = nil) throws {
        switch self {
        case .ok, .countLow, .notRequired: return
        case .notInitialized:
            throw TokenError(
                .pinUnavailable,
                "the token \"\(tokenLabel)\" has no user PIN set; initialize it with the token's own tool")
        case .locked:
            throw TokenError(
                .pinLocked,
                "the user PIN of \"\(tokenLabel)\" is locked after too many wrong tries; "
                    + (unblockAdvice ?? UnblockAdvice.generic) + ", then try again",
                returnValueName: ReturnValue.name(ReturnValue.pinLocked))
        case .finalTry:
            guard confirmedFinalTry else {
                throw TokenError(
                    .pinFinalTry,
                    "the token \"\(tokenLabel)\" has ONE PIN try left; a wrong PIN now locks it. "
                        + "Check the PIN, then pass --confirm-final-try to use the last try")
            }
        }
    }
}

/// How to unblock a locked user PIN, per kind of token. Only the token's own tools can do it: the wallet
/// never holds a PUK or SO PIN.
enum UnblockAdvice {
    static let generic =
        "unblock it with the SO PIN or PUK using the token's own tool (yubico-piv-tool -a unblock-pin, "
        + "or pkcs11-tool --login --login-type so --init-pin)"
    static let piv =
        "unblock it with the card's PUK: yubico-piv-tool -a unblock-pin -P PUK -N NEW_PIN "
        + "(or ykman piv access unblock-pin); after 3 wrong PUKs only a reset of the PIV application helps, "
        + "and it erases the keys"
    static let smartCardHSM =
        "unblock it with the SO PIN: pkcs11-tool --module opensc-pkcs11.so --login --login-type so "
        + "--so-pin SO_PIN --init-pin --new-pin NEW_PIN (Nitrokey HSM / SmartCard-HSM)"
    static let softHSM =
        "reset it as the SO: pkcs11-tool --module libsofthsm2.so --token-label LABEL --login "
        + "--login-type so --so-pin SO_PIN --init-pin --new-pin NEW_PIN"
    static let tpm =
        "the TPM locks out after wrong PINs and unlocks after its recovery time; an owner can clear it "
        + "at once with tpm2_dictionarylockout --clear-lockout, and the SO can set a new user PIN with tpm2_ptool initpin"

    /// The advice for a token, by what its module reports.
    static func forToken(manufacturer: String, model: String, moduleDescription: String) -> String {
        let text = [manufacturer, model, moduleDescription].joined(separator: " ").lowercased()
        if text.contains("yubico") || text.contains("piv") { return piv }
        if text.contains("smartcard-hsm") || text.contains("sc-hsm") { return smartCardHSM }
        if text.contains("softhsm") { return softHSM }
        if text.contains("tpm") { return tpm }
        return generic
    }
}

/// A token in a slot of a loaded module.
public final class Token: @unchecked Sendable {
    let module: Module
    let slot: SlotID
    /// The token's fields as it reports them.
    public let label, manufacturer, model, serial: String
    /// The slot's description (a PC/SC reader's name) and the token's hardware and firmware versions
    /// (CK_VERSION as "major.minor"), as the module reports them.
    public let slotDescription, hardwareVersion, firmwareVersion: String
    /// The module's p11-kit name, or its path.
    public var moduleName: String { module.name }
    /// The module's shared library.
    public var modulePath: String { module.path }

    init(module: Module, slot: SlotID, info: TokenInfo) {
        self.module = module
        self.slot = slot
        label = info.label
        manufacturer = info.manufacturer
        model = info.model
        serial = info.serial
        slotDescription = info.slotDescription
        hardwareVersion = info.hardwareVersion
        firmwareVersion = info.firmwareVersion
    }

    /// The token's flags, read fresh.
    var flags: UInt { get throws { try module.tokenInfo(slot).flags } }

    /// The PIN state, read fresh from the token's flags.
    public var pinState: PINState { get throws { PINState(flags: try flags) } }

    /// How to unblock this token's locked user PIN, with its own tools.
    public var unblockAdvice: String {
        UnblockAdvice.forToken(
            manufacturer: manufacturer, model: model,
            moduleDescription: (try? module.info().description) ?? "")
    }

    /// Checks that a login may be attempted, with this token's unblock advice when its PIN is locked.
    public func permitsLogin(confirmedFinalTry: Bool) throws {
        try pinState.permitsLogin(confirmedFinalTry: confirmedFinalTry, tokenLabel: label, unblockAdvice: unblockAdvice)
    }

    /// Whether the token's PIN pad or biometrics handle authentication itself.
    public var hasProtectedAuthenticationPath: Bool {
        get throws { try flags & TokenFlag.protectedAuthenticationPath != 0 }
    }

    /// A URI that names this token and its module, never its slot id.
    public var uri: PKCS11URI {
        var uri = PKCS11URI()
        uri.token = label
        uri.manufacturer = manufacturer
        uri.model = model
        uri.serial = serial
        if module.name.hasPrefix("/") { uri.modulePath = module.name } else { uri.moduleName = module.name }
        return uri
    }

    /// Whether the token is in its slot now (`Module.tokenPresent`).
    var isPresent: Bool { module.tokenPresent(slot) }

    /// How long a failure that does not say why is followed by asking whether the token is still there:
    /// OpenSC keeps a slot's state for a second (it looks for the card at most once a second), so a card
    /// pulled a moment ago still shows as present at first. Only such failures wait, and only on a token
    /// that stays present.
    static let presenceSettleMillisecondsMax = 1500
    /// The pause between two looks at the slot while it settles.
    static let presencePollMilliseconds = 100

    /// Whether the token is still in its slot after `presenceSettleMillisecondsMax`: false as soon as one
    /// look finds the slot empty.
    var staysPresent: Bool {
        var waited = 0
        while waited < Self.presenceSettleMillisecondsMax {
            guard isPresent else { return false }
            usleep(useconds_t(Self.presencePollMilliseconds * 1000))
            waited += Self.presencePollMilliseconds
        }
        return isPresent
    }

    /// Whether the token offers a PKCS#11 mechanism by number.
    func supports(mechanism: UInt) -> Bool { module.supports(slot, mechanism: mechanism) }

    /// Whether this token matches a URI's token attributes.
    func matches(_ uri: PKCS11URI, slotInfo: TokenInfo) -> Bool {
        func same(_ wanted: String?, _ actual: String) -> Bool { wanted == nil || wanted == actual }
        return same(uri.token, label) && same(uri.manufacturer, manufacturer) && same(uri.model, model)
            && same(uri.serial, serial) && same(uri.slotDescription, slotInfo.slotDescription)
            && same(uri.slotManufacturer, slotInfo.slotManufacturer)
    }

    /// Loses every session on the token, as a removal would. For tests of recovery from lost sessions
    /// (`@testable import`); internal, so no production caller can drop a token's sessions.
    func dropAllSessionsForTesting() throws { try module.closeAllSessions(slot) }
}

/// The process's loaded modules. Each module is loaded and initialized at most once per process.
public final class TokenLibrary: @unchecked Sendable {
    /// The one library of this process.
    public static let shared = TokenLibrary()

    private let lock = NSLock()
    private var registered: [Module]?
    private var byPath: [String: Module] = [:]
    /// Init args for modules, by name or path (NSS softokn needs them).
    private var initArguments: [String: String] = [:]

    /// Sets the init args passed to a module when this process initializes it.
    public func setInitArguments(_ arguments: String, forModule name: String) {
        lock.withLock { initArguments[name] = arguments }
    }

    /// The modules a URI can refer to: the one it names, or every registered one.
    func modules(for uri: PKCS11URI) throws -> [Module] {
        try lock.withLock {
            if let path = uri.modulePath {
                if let module = byPath[path] { return [module] }
                let module = try Module.load(path: path)
                byPath[path] = module
                return [module]
            }
            if registered == nil { registered = Module.loadRegistered() }
            let all = registered ?? []
            guard let name = uri.moduleName else { return all }
            guard let module = all.first(where: { $0.name == name }) else {
                let known = all.map(\.name).sorted().joined(separator: ", ")
                throw TokenError(
                    .moduleNotFound,
                    "p11-kit has no module named \"\(name)\" (registered: \(known.isEmpty ? "none" : known)); "
                        + "install it, or give its path with module-path=")
            }
            return [module]
        }
    }

    private func initialize(_ module: Module) throws {
        let arguments = lock.withLock { initArguments[module.name] }
        try module.initialize(initArguments: arguments)
    }

    /// One row of `secure token list`.
    public struct Listing: Sendable {
        public let moduleName: String
        public let modulePath: String
        public let moduleDescription: String
        public let tokens: [Token]
        public let error: TokenError?
    }

    /// Every module with its tokens; a module that fails to initialize is listed with its error.
    public func list(_ uri: PKCS11URI = PKCS11URI()) throws -> [Listing] {
        try modules(for: uri).map { module in
            do {
                try initialize(module)
                let description = (try? module.info().description) ?? ""
                let tokens = try module.slotsWithTokens().compactMap { slot -> Token? in
                    let info = try module.tokenInfo(slot)
                    guard info.flags & TokenFlag.tokenInitialized != 0 else { return nil }
                    let token = Token(module: module, slot: slot, info: info)
                    return token.matches(uri, slotInfo: info) ? token : nil
                }
                return Listing(
                    moduleName: module.name, modulePath: module.path, moduleDescription: description,
                    tokens: tokens, error: nil)
            } catch let error as TokenError {
                return Listing(
                    moduleName: module.name, modulePath: module.path, moduleDescription: "", tokens: [], error: error)
            }
        }
    }

    /// The one token a URI names. No token, or more than one, is an error that says how to be precise.
    public func token(_ uri: PKCS11URI) throws -> Token {
        if uri.slotID != nil && uri.token == nil && uri.serial == nil {
            throw TokenError(
                .invalidURI,
                "the URI picks a token by slot-id alone; slot ids change between runs, so name the token (token=, serial=)"
            )
        }
        let listings = try list(uri)
        let tokens = listings.flatMap(\.tokens)
        if tokens.count == 1 { return tokens[0] }
        if tokens.isEmpty {
            let failures = listings.compactMap { listing in listing.error.map { "\(listing.moduleName): \($0)" } }
            let reason = failures.isEmpty ? "" : " (" + failures.joined(separator: "; ") + ")"
            throw TokenError(
                .tokenNotFound,
                "no token matches \(uri.withoutPIN.tokenOnly); is it inserted? "
                    + "`secure token list` shows what is present" + reason)
        }
        let names = tokens.map { "\($0.uri)" }.joined(separator: ", ")
        throw TokenError(
            .ambiguous,
            "\(tokens.count) tokens match \(uri.withoutPIN.tokenOnly): \(names); add serial= or token= to pick one")
    }

    /// Finalizes the modules this process initialized.
    public func shutdown() {
        let modules = lock.withLock { (registered ?? []) + Array(byPath.values) }
        modules.forEach { $0.finalize() }
    }

    /// The registered module names, for error messages and `token list`.
    public func registeredModuleNames() throws -> [String] {
        try modules(for: PKCS11URI()).map(\.name)
    }

    /// Module lookup for init-demo, which must initialize SoftHSM only after setting its config.
    func module(named name: String) throws -> Module {
        var uri = PKCS11URI()
        uri.moduleName = name
        let module = try modules(for: uri)[0]
        try initialize(module)
        return module
    }
}

extension Token {
    /// The P-256 public keys on the token, read without a PIN (public key objects are public).
    public func publicKeys() throws -> [TokenKey] {
        let session = try module.openSession(slot, readWrite: false)
        defer { session.close() }
        let handles = try session.findObjects([
            .number(Attribute.class, CK.classPublicKey), .number(Attribute.keyType, CK.keyTypeEC),
        ])
        return try handles.compactMap { handle in
            let id = try session.attribute(handle, Attribute.id) ?? []
            let label = String(decoding: try session.attribute(handle, Attribute.label) ?? [], as: UTF8.self)
            guard let publicKey = try? TokenSession.readPublicKey(session, handle) else { return nil }
            // The URI names the key by CKA_ID only: PIV modules label the public and private halves
            // differently ("Public key for Digital Signature"), and the URI must find the private key.
            var keyURI = uri
            keyURI.id = id
            keyURI.type = .privateKey
            return TokenKey(id: id, label: label, publicKey: publicKey, uri: keyURI)
        }
    }

    /// The public key of the key a URI names (by id and/or label), without a PIN.
    public func publicKey(_ keyURI: PKCS11URI) throws -> TokenKey {
        guard keyURI.id != nil || keyURI.object != nil else {
            throw TokenError(.invalidURI, "the key URI names no key; add id= or object=")
        }
        let matches = try publicKeys().filter { key in
            (keyURI.id == nil || keyURI.id == key.id) && (keyURI.object == nil || keyURI.object == key.label)
        }
        guard matches.count == 1 else {
            if matches.isEmpty {
                throw TokenError(
                    .keyNotFound,
                    "no P-256 key matches \(keyURI.withoutPIN) on \"\(label)\"; `secure keys list` shows the keys there"
                )
            }
            throw TokenError(.ambiguous, "\(matches.count) keys match \(keyURI.withoutPIN); add id= to pick one")
        }
        return matches[0]
    }
}

extension Token {
    /// The token's count of open sessions (CK_TOKEN_INFO.ulSessionCount), or nil when it does not say.
    public var openSessionCount: Int? {
        get throws {
            let count = try module.tokenInfo(slot).sessionCount
            return count == CK.unavailableInformation ? nil : Int(count)
        }
    }

    /// Open sessions of this process on this token, counted by probing handles (tests only, through
    /// `@testable import`).
    func probedOpenSessionCountForTesting(handleMax: UInt = 100_000) -> Int {
        module.probeOpenSessions(slot, handleMax: handleMax)
    }
}
