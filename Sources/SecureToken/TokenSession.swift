import Foundation
import SecureCrypto

/// What a key may do. The signing key may only sign; the key-agreement key may only derive.
public enum KeyUsage: String, Sendable, Codable {
    case sign, derive
    /// RSA-OAEP decryption, for tokens without ECDH (TokenRSA.swift).
    case decrypt
}

/// A key pair on a token, named by its CKA_ID, with the public key read from the token.
public struct TokenKey: Sendable {
    /// CKA_ID, random per key.
    public let id: [UInt8]
    /// CKA_LABEL.
    public let label: String
    /// The public key, checked to be on the curve.
    public let publicKey: P256.PublicKey
    /// A URI that names this key on its token.
    public let uri: PKCS11URI

    /// A key as a token reports it; public so that a token stand-in (SecureTestSupport's simulated token)
    /// can describe its keys the same way.
    public init(id: [UInt8], label: String, publicKey: P256.PublicKey, uri: PKCS11URI) {
        self.id = id
        self.label = label
        self.publicKey = publicKey
        self.uri = uri
    }
}

/// Attributes of a private key as the token reports them, for checks after generation and for audits.
public struct PrivateKeyAttributes: Sendable, Codable, Equatable {
    public var sensitive, extractable, neverExtractable, alwaysSensitive, local, alwaysAuthenticate: Bool?
    public var sign, derive, decrypt, unwrap, signRecover, isPrivate, token: Bool?

    /// Every attribute always present, null when the token does not report it (`keys audit --json` keeps
    /// one shape, docs/JSON.md).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sensitive, forKey: .sensitive)
        try container.encode(extractable, forKey: .extractable)
        try container.encode(neverExtractable, forKey: .neverExtractable)
        try container.encode(alwaysSensitive, forKey: .alwaysSensitive)
        try container.encode(local, forKey: .local)
        try container.encode(alwaysAuthenticate, forKey: .alwaysAuthenticate)
        try container.encode(sign, forKey: .sign)
        try container.encode(derive, forKey: .derive)
        try container.encode(decrypt, forKey: .decrypt)
        try container.encode(unwrap, forKey: .unwrap)
        try container.encode(signRecover, forKey: .signRecover)
        try container.encode(isPrivate, forKey: .isPrivate)
        try container.encode(token, forKey: .token)
    }
}

/// What a caller accepts from a token that lacks a safeguard. Every flag is off by default, and each
/// names the property that is lost when it is on; the CLI spells them `--allow-unenforced-pin` and
/// `--allow-unproven-origin`.
public struct TokenPolicy: Sendable, Equatable {
    /// Use a token that stores CKA_ALWAYS_AUTHENTICATE but does not enforce it (NSS softokn answers the
    /// per-signature C_Login with CKR_USER_ALREADY_LOGGED_IN). Lost: the PIN for every signature; after
    /// one login, any code in the process can sign.
    public var allowUnenforcedPIN: Bool
    /// Keep keys the token does not report as generated on it (CKA_LOCAL false), although this session
    /// asked it to generate them (NSS softokn). Lost: the token's own word that the key was never
    /// imported, so a later audit cannot tell these keys from imported ones.
    public var allowUnprovenOrigin: Bool
    /// The attestation certificates and roots that prove a PIV key's origin (`--attestation`,
    /// `--attestation-root`; PIVAttestation.swift). On PIV tokens CKA_LOCAL is not evidence, and a key
    /// without a verified attestation has an unproven origin.
    public var attestation: AttestationSources

    /// The strict policy: every safeguard required.
    public static let strict = TokenPolicy()

    public init(
        allowUnenforcedPIN: Bool = false, allowUnprovenOrigin: Bool = false,
        attestation: AttestationSources = .shipped
    ) {
        self.allowUnenforcedPIN = allowUnenforcedPIN
        self.allowUnprovenOrigin = allowUnprovenOrigin
        self.attestation = attestation
    }
}

/// An authenticated session on one token: the user is logged in with a PIN that is held in wiped memory
/// for as long as the approved operation lasts, then logged out and wiped. One thread at a time uses
/// it; a lock serializes callers.
public final class TokenSession: @unchecked Sendable {
    /// The token this session is on.
    public let token: Token
    /// What this session accepts from a token that lacks a safeguard. A wallet's command sets it once the
    /// wallet's signed settings are read (the allowances recorded at `wallet init`); its own lock, apart
    /// from the session's, lets operations that hold the session's lock read it.
    public var policy: TokenPolicy {
        get { policyLock.withLock { storedPolicy } }
        set { policyLock.withLock { storedPolicy = newValue } }
    }
    private var storedPolicy: TokenPolicy
    private let policyLock = NSLock()
    /// The PIN while the session is unlocked; nil while it is locked between approvals.
    private var heldPIN: PIN?
    private let mutex = NSLock()
    private var handle: SessionHandle?
    private var closed = false
    /// Private-key handles by CKA_ID. Handles become invalid after a login, logout or lost session, so
    /// the cache is emptied whenever the session is reopened.
    private var keyHandles: [[UInt8]: (ObjectHandle, alwaysAuthenticate: Bool)] = [:]

    /// Opens a read-write session and logs the user in. A locked PIN, or the final try without
    /// confirmation, is refused before the PIN is sent. A wrong PIN is discarded and never retried.
    public init(token: Token, pin: PIN, confirmFinalTry: Bool = false, policy: TokenPolicy = .strict) throws {
        self.token = token
        heldPIN = pin
        storedPolicy = policy
        try token.permitsLogin(confirmedFinalTry: confirmFinalTry)
        try mutex.withLock { _ = try openLocked() }
    }

    deinit { close() }

    /// Logs out, closes the session and wipes the PIN. Safe to call twice.
    public func close() {
        mutex.withLock {
            guard !closed else { return }
            closed = true
            endTokenSession()
        }
    }

    /// Logs out, closes the token session and wipes the PIN, but keeps this object for a later `unlock`:
    /// a wallet stays open between payments while the token is locked (the PIN is held only for the
    /// machine-speed steps of one approved operation).
    public func lock() {
        mutex.withLock { endTokenSession() }
    }

    /// Logs out, closes the token session and wipes the PIN; the caller holds the mutex.
    private func endTokenSession() {
        handle?.logout()
        handle?.close()
        handle = nil
        keyHandles = [:]
        heldPIN?.discard()
        heldPIN = nil
    }

    /// Whether a PIN is held and operations can run.
    public var isUnlocked: Bool { mutex.withLock { heldPIN != nil && !closed } }

    /// Whether the PIN this session holds is `candidate`, or nil when none is held (the session is locked).
    /// For audits: a PIV card still on its factory PIN is flagged. The PIN is compared in place, never copied.
    public func holdsPIN(_ candidate: String) -> Bool? {
        mutex.withLock {
            guard let heldPIN, !heldPIN.isDiscarded else { return nil }
            let wanted = Array(candidate.utf8)
            return try? heldPIN.withBytes { pointer, count in
                count == wanted.count && (0..<count).allSatisfy { pointer[$0] == wanted[$0] }
            }
        }
    }

    /// Logs in again with a PIN, after `lock`. The PIN state is checked first, as at the first login.
    public func unlock(pin: PIN, confirmFinalTry: Bool = false) throws {
        try token.pinState.permitsLogin(confirmedFinalTry: confirmFinalTry, tokenLabel: token.label)
        try mutex.withLock {
            precondition(!closed, "TokenSession unlocked after close()")
            heldPIN?.discard()
            heldPIN = pin
            handle?.close()
            handle = nil
            do {
                _ = try openLocked()
            } catch {
                heldPIN = nil
                throw error
            }
        }
    }

    /// Runs `body` with a live session, reopening and logging in again when the previous one was lost.
    private func openLocked() throws -> SessionHandle {
        precondition(!closed, "TokenSession used after close()")
        if let handle { return handle }
        guard let pin = heldPIN else {
            throw TokenError(
                .pinUnavailable, "the token is locked until the next approval; approve the operation to unlock it")
        }
        let fresh = try token.module.openSession(token.slot, readWrite: true)
        let value = try fresh.login(userType: CK.user, pin: pin)
        switch value {
        case ReturnValue.ok, ReturnValue.userAlreadyLoggedIn: // another session of ours holds the login
            break
        case ReturnValue.pinIncorrect:
            pin.discard()
            throw pkcs11Error("C_Login", value)
        case ReturnValue.pinLocked: // the wrong PIN that locked it, or a token that sets no flags (a TPM)
            pin.discard()
            throw TokenError(
                .pinLocked, "the user PIN of \"\(token.label)\" is locked; \(token.unblockAdvice), then try again",
                returnValueName: ReturnValue.name(ReturnValue.pinLocked))
        default:
            throw pkcs11Error("C_Login", value)
        }
        handle = fresh
        keyHandles = [:]
        return fresh
    }

    /// Forgets a session that the token no longer knows, so the next call reopens it.
    private func loseSessionLocked() {
        handle?.close()
        handle = nil
        keyHandles = [:]
    }

    /// `withSession` for the RSA operations in TokenRSA.swift.
    func withSessionForRSA<Result>(_ body: (SessionHandle) throws -> Result) throws -> Result { try withSession(body) }

    /// Runs one operation under the lock; a lost session or removed token gives a clean error and is
    /// reopened on the next call. A failure that does not say why (CKR_GENERAL_ERROR, which is what OpenSC
    /// answers when the card is pulled during a signature) is a removal when the slot no longer holds the
    /// token within `Token.presenceSettleMillisecondsMax`, so a pulled card is reported the same way, with
    /// the same exit code, on every module.
    private func withSession<Result>(_ body: (SessionHandle) throws -> Result) throws -> Result {
        try mutex.withLock {
            guard !closed else {
                throw TokenError(.pinUnavailable, "the token session was closed; approve the operation again")
            }
            let session = try openLocked()
            do {
                return try body(session)
            } catch let error as TokenError
                where error.code == .tokenRemoved || (error.code == .pkcs11 && !token.staysPresent)
            {
                loseSessionLocked()
                throw TokenError(
                    .tokenRemoved,
                    "the token \"\(token.label)\" or its session went away during the operation; "
                        + "nothing was signed. Reinsert the token and retry", returnValueName: error.returnValueName)
            }
        }
    }

    // MARK: Keys

    /// Generates a P-256 key pair on the token. The private key is a private, sensitive, never
    /// extractable token object with CKA_ALWAYS_AUTHENTICATE for signing keys, allowed only its one
    /// usage, with a random CKA_ID. The attributes are read back, and a key the token reports as
    /// extractable, not sensitive or not generated on the token is destroyed and refused.
    public func generateKey(label: String, usage: KeyUsage) throws -> TokenKey {
        let id = SystemRandom.bytes(16)
        let curve: [UInt8] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07] // prime256v1
        let labelBytes = Array(label.utf8)
        let publicTemplate: [AttributeValue] = [
            .number(Attribute.class, CK.classPublicKey), .number(Attribute.keyType, CK.keyTypeEC),
            .bool(Attribute.token, true), .bool(Attribute.private, false), .bytes(Attribute.ecParams, curve),
            .bool(Attribute.verify, usage == .sign), .bool(Attribute.encrypt, false), .bool(Attribute.wrap, false),
            .bool(Attribute.derive, usage == .derive), .bytes(Attribute.id, id), .bytes(Attribute.label, labelBytes),
        ]
        let privateTemplate: [AttributeValue] = [
            .number(Attribute.class, CK.classPrivateKey), .number(Attribute.keyType, CK.keyTypeEC),
            .bool(Attribute.token, true), .bool(Attribute.private, true), .bool(Attribute.sensitive, true),
            .bool(Attribute.extractable, false), .bool(Attribute.sign, usage == .sign),
            .bool(Attribute.derive, usage == .derive), .bool(Attribute.decrypt, false), .bool(Attribute.unwrap, false),
            .bool(Attribute.signRecover, false), .bool(Attribute.alwaysAuthenticate, usage == .sign),
            .bytes(Attribute.id, id), .bytes(Attribute.label, labelBytes),
        ]
        // The usages a key must not have, said outright. tpm2-pkcs11 will not be told them: a TPM key's usages
        // come from its TPM object attributes, and it answers a template that contradicts them with
        // CKR_GENERAL_ERROR. Then the key is asked for once more without them; the attributes that keep it
        // on the token are still required and read back below.
        let negativeUsages: Set<UInt> = [
            Attribute.encrypt, Attribute.wrap, Attribute.decrypt, Attribute.unwrap,
            Attribute.signRecover, usage == .sign ? Attribute.derive : Attribute.sign,
        ]
        func withoutNegativeUsages(_ template: [AttributeValue]) -> [AttributeValue] {
            template.filter { value in
                if case .bool(let type, false) = value, negativeUsages.contains(type) { return false }
                return true
            }
        }
        return try withSession { session in
            let publicHandle: ObjectHandle, privateHandle: ObjectHandle
            do {
                (publicHandle, privateHandle) = try session.generateECKeyPair(
                    publicTemplate: publicTemplate,
                    privateTemplate: privateTemplate)
            } catch let error as TokenError
                where [
                    ReturnValue.generalError, ReturnValue.templateInconsistent,
                    ReturnValue.attributeValueInvalid,
                ].map(ReturnValue.name)
                .contains(error.returnValueName)
            {
                (publicHandle, privateHandle) = try session.generateECKeyPair(
                    publicTemplate: withoutNegativeUsages(publicTemplate),
                    privateTemplate: withoutNegativeUsages(privateTemplate))
            }
            do {
                let attributes = try Self.readAttributes(session, privateHandle)
                try Self.refuseWeak(
                    attributes, usage: usage, generatedHere: true, policy: policy, ignoresLocal: token.isPIV,
                    what: "the token made a key that was destroyed because it")
                let publicKey = try Self.readPublicKey(session, publicHandle)
                return TokenKey(id: id, label: label, publicKey: publicKey, uri: keyURI(id: id, label: label))
            } catch {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
                throw error
            }
        }
    }

    /// Refuses a private key that could leave the token, or that the token does not report as made on
    /// it, or a signing key without CKA_ALWAYS_AUTHENTICATE. The message shows what the token reported.
    /// A key this session just generated may lack CKA_LOCAL only when the policy allows it. On a PIV token
    /// (`ignoresLocal`) CKA_LOCAL is not looked at: the key's attestation decides its origin (`origin(of:)`).
    static func refuseWeak(
        _ attributes: PrivateKeyAttributes, usage: KeyUsage, generatedHere: Bool, policy: TokenPolicy,
        ignoresLocal: Bool = false, what: String
    ) throws {
        func shown(_ value: Bool?) -> String { value.map { $0 ? "true" : "false" } ?? "not reported" }
        var problems: [String] = []
        if attributes.extractable != false {
            problems.append("extractable (CKA_EXTRACTABLE \(shown(attributes.extractable)))")
        }
        if attributes.sensitive != true {
            problems.append("not sensitive (CKA_SENSITIVE \(shown(attributes.sensitive)))")
        }
        var hint = ""
        if !ignoresLocal && attributes.local != true && !(generatedHere && policy.allowUnprovenOrigin) {
            problems.append("not reported as generated on the token (CKA_LOCAL \(shown(attributes.local)))")
            if generatedHere {
                hint =
                    "; --allow-unproven-origin accepts a key generated just now that the token does not mark as "
                    + "generated, losing any later proof that it was never imported"
            }
        }
        if usage == .sign && attributes.alwaysAuthenticate != true {
            problems.append("not always-authenticate (CKA_ALWAYS_AUTHENTICATE \(shown(attributes.alwaysAuthenticate)))")
        }
        if usage == .sign && attributes.sign != true { problems.append("not allowed to sign (CKA_SIGN)") }
        // CKA_DERIVE is not required: ykcs11 reports it false on PIV keys that it does derive with. The wallet
        // proves instead that each key-agreement key unwraps its copy of the database key (Wallet.create).
        guard problems.isEmpty else {
            throw TokenError(
                .keyRefused,
                "\(what) is " + problems.joined(separator: ", ")
                    + ". This token cannot keep wallet keys safely" + hint)
        }
    }

    /// Selects a key pair that is already on the token, for tokens whose keys are made by their own tool
    /// (a PIV card's slots 9C and 9D). The same checks as for a generated key apply, and CKA_LOCAL must be
    /// true: the token must say the key was generated on it (ykcs11 learns that from the card's
    /// attestation or metadata). The public key object must be there too.
    public func selectKey(_ uri: PKCS11URI, usage: KeyUsage) throws -> TokenKey {
        try withSession { session in
            let (handle, _) = try findPrivateKeyLocked(session, uri)
            let id = try session.attribute(handle, Attribute.id) ?? []
            let label = String(decoding: try session.attribute(handle, Attribute.label) ?? [], as: UTF8.self)
            try Self.refuseWeak(
                try Self.readAttributes(session, handle), usage: usage, generatedHere: false, policy: policy,
                ignoresLocal: token.isPIV,
                what: "the \(usage == .sign ? "signing" : "key-agreement") key \(uri.withoutPIN)")
            let publicKey = try publicKeyLocked(session, id: id)
            return TokenKey(id: id, label: label, publicKey: publicKey, uri: keyURI(id: id, label: label))
        }
    }

    /// The URI of the private key with this id and label on this session's token.
    func keyURI(id: [UInt8], label: String) -> PKCS11URI {
        var uri = token.uri
        uri.id = id
        uri.object = label
        uri.type = .privateKey
        return uri
    }

    /// Finds the one private EC key a URI names (by id and/or label) and its public key.
    public func key(_ uri: PKCS11URI) throws -> TokenKey {
        try withSession { session in
            let (handle, _) = try findPrivateKeyLocked(session, uri)
            let id = try session.attribute(handle, Attribute.id) ?? []
            let label = String(decoding: try session.attribute(handle, Attribute.label) ?? [], as: UTF8.self)
            let publicKey = try publicKeyLocked(session, id: id)
            return TokenKey(id: id, label: label, publicKey: publicKey, uri: keyURI(id: id, label: label))
        }
    }

    /// The attributes of the private key a URI names.
    public func attributes(of uri: PKCS11URI) throws -> PrivateKeyAttributes {
        try withSession { session in try Self.readAttributes(session, try findPrivateKeyLocked(session, uri).0) }
    }

    /// Every private EC key on the token.
    public func keys() throws -> [TokenKey] {
        try withSession { session in
            try Self.privateKeys(session, keyType: CK.keyTypeEC) { id, label in
                guard let publicKey = try? publicKeyLocked(session, id: id) else { return nil }
                return TokenKey(id: id, label: label, publicKey: publicKey, uri: keyURI(id: id, label: label))
            }
        }
    }

    /// Every private key of one type on the token, made into a `Key` from its id and label by `make`, which
    /// returns nil for one to leave out (its public half is missing or unreadable). The caller holds the session.
    static func privateKeys<Key>(
        _ session: SessionHandle, keyType: UInt,
        _ make: (_ id: [UInt8], _ label: String) throws -> Key?
    ) throws -> [Key] {
        let handles = try session.findObjects([
            .number(Attribute.class, CK.classPrivateKey),
            .number(Attribute.keyType, keyType),
        ])
        return try handles.compactMap { handle in
            let id = try session.attribute(handle, Attribute.id) ?? []
            let label = String(decoding: try session.attribute(handle, Attribute.label) ?? [], as: UTF8.self)
            return try make(id, label)
        }
    }

    /// Destroys both halves of the key pair a URI names.
    public func destroyKey(_ uri: PKCS11URI) throws {
        try withSession { session in
            let (handle, _) = try findPrivateKeyLocked(session, uri)
            let id = try session.attribute(handle, Attribute.id) ?? []
            for publicHandle in try session.findObjects([
                .number(Attribute.class, CK.classPublicKey), .bytes(Attribute.id, id),
            ]) {
                try session.destroyObject(publicHandle)
            }
            try session.destroyObject(handle)
            keyHandles[id] = nil
        }
    }

    private func findPrivateKeyLocked(_ session: SessionHandle, _ uri: PKCS11URI) throws -> (ObjectHandle, Bool) {
        if let id = uri.id, let cached = keyHandles[id] { return (cached.0, cached.alwaysAuthenticate) }
        guard uri.id != nil || uri.object != nil else {
            throw TokenError(.invalidURI, "the key URI names no key; add id= or object=")
        }
        var template: [AttributeValue] = [
            .number(Attribute.class, CK.classPrivateKey), .number(Attribute.keyType, CK.keyTypeEC),
        ]
        if let id = uri.id { template.append(.bytes(Attribute.id, id)) }
        if let object = uri.object { template.append(.bytes(Attribute.label, Array(object.utf8))) }
        let handles = try session.findObjects(template)
        guard handles.count == 1 else {
            if handles.isEmpty {
                throw TokenError(
                    .keyNotFound,
                    "no P-256 private key matches \(uri.withoutPIN) on \"\(token.label)\"; "
                        + "`secure keys list` shows the keys there")
            }
            throw TokenError(.ambiguous, "\(handles.count) keys match \(uri.withoutPIN); add id= to pick one")
        }
        let id = try session.attribute(handles[0], Attribute.id) ?? []
        let alwaysAuthenticate = try session.attribute(handles[0], Attribute.alwaysAuthenticate) == [1]
        keyHandles[id] = (handles[0], alwaysAuthenticate)
        return (handles[0], alwaysAuthenticate)
    }

    private func publicKeyLocked(_ session: SessionHandle, id: [UInt8]) throws -> P256.PublicKey {
        let handles = try session.findObjects([.number(Attribute.class, CK.classPublicKey), .bytes(Attribute.id, id)])
        guard let handle = handles.first else {
            throw TokenError(.keyNotFound, "the token holds no public key object for the key with id \(Hex.encode(id))")
        }
        return try Self.readPublicKey(session, handle)
    }

    /// Reads CKA_EC_POINT: 65 bytes when raw, 67 when wrapped in a DER OCTET STRING; decided by length,
    /// and the point is checked to be on the curve.
    static func readPublicKey(_ session: SessionHandle, _ handle: ObjectHandle) throws -> P256.PublicKey {
        guard let point = try session.attribute(handle, Attribute.ecPoint) else {
            throw TokenError(.keyRefused, "the token did not return the key's CKA_EC_POINT")
        }
        return try ECPoint.publicKey(fromAttribute: point)
    }

    static func readAttributes(_ session: SessionHandle, _ handle: ObjectHandle) throws -> PrivateKeyAttributes {
        func flag(_ type: UInt) throws -> Bool? { try session.attribute(handle, type).map { $0.first == 1 } }
        return PrivateKeyAttributes(
            sensitive: try flag(Attribute.sensitive), extractable: try flag(Attribute.extractable),
            neverExtractable: try flag(Attribute.neverExtractable),
            alwaysSensitive: try flag(Attribute.alwaysSensitive),
            local: try flag(Attribute.local), alwaysAuthenticate: try flag(Attribute.alwaysAuthenticate),
            sign: try flag(Attribute.sign), derive: try flag(Attribute.derive), decrypt: try flag(Attribute.decrypt),
            unwrap: try flag(Attribute.unwrap), signRecover: try flag(Attribute.signRecover),
            isPrivate: try flag(Attribute.private), token: try flag(Attribute.token))
    }

    // MARK: Signing

    /// Signs a 32-byte digest with raw CKM_ECDSA: C_SignInit, then at once the context login when the
    /// key is always-authenticate, then C_Sign into a 64-byte buffer. Nothing goes in between.
    /// The signature is normalized to low s and verified against the token's public key before it is
    /// returned.
    public func sign(digest: [UInt8], key: TokenKey) throws -> ECDSASignature {
        precondition(digest.count == SHA256.byteCount, "sign takes a SHA-256 digest")
        announceTouch(for: key, operation: "sign") // Touch.swift: a PIV key may hold the signature for a touch
        let raw: [UInt8] = try withSession { session in
            var uri = PKCS11URI()
            uri.id = key.id
            let (handle, alwaysAuthenticate) = try findPrivateKeyLocked(session, uri)
            return try signLocked(session, handle: handle, alwaysAuthenticate: alwaysAuthenticate, digest: digest)
        }
        let signature = try ECDSASignature(raw: raw).lowS
        guard key.publicKey.isValidSignature(signature, digest: digest) else {
            throw TokenError(
                .signatureCheckFailed,
                "the token's signature does not verify with its own public key; "
                    + "the token or the key is faulty, and nothing was signed")
        }
        return signature
    }

    private func signLocked(
        _ session: SessionHandle, handle: ObjectHandle, alwaysAuthenticate: Bool,
        digest: [UInt8]
    ) throws -> [UInt8] {
        var restarted = false
        while true {
            let initValue = session.signInitECDSA(handle)
            if initValue == ReturnValue.operationActive {
                // CKR_OPERATION_ACTIVE: a TPM token leaves a failed operation behind; only a new session clears it.
                loseSessionLocked()
                throw TokenError(
                    .pkcs11,
                    "C_SignInit: an earlier operation was still active on the session; "
                        + "the session was reopened, retry",
                    returnValueName: ReturnValue.name(ReturnValue.operationActive))
            }
            try check("C_SignInit", initValue)
            var contextLoginSucceeded = false
            if alwaysAuthenticate {
                guard let pin = heldPIN else {
                    throw TokenError(.pinUnavailable, "the token is locked until the next approval")
                }
                let loginValue = try session.login(userType: CK.contextSpecific, pin: pin)
                switch loginValue {
                case ReturnValue.ok:
                    contextLoginSucceeded = true
                case ReturnValue.userAlreadyLoggedIn:
                    // CKR_USER_ALREADY_LOGGED_IN: the token does not enforce the per-signature login.
                    guard policy.allowUnenforcedPIN else {
                        loseSessionLocked() // a new session ends the sign operation that C_SignInit began
                        throw TokenError(
                            .unsupported,
                            "the token \"\(token.label)\" does not enforce the PIN for each "
                                + "signature (its per-signature C_Login says the user is already logged in), so after one "
                                + "login anything in this process could sign; nothing was signed. Pass "
                                + "--allow-unenforced-pin to use it anyway without that guarantee",
                            returnValueName: ReturnValue.name(ReturnValue.userAlreadyLoggedIn))
                    }
                case ReturnValue.pinIncorrect:
                    pin.discard()
                    loseSessionLocked()
                    throw pkcs11Error("C_Login (per-signature)", loginValue)
                default:
                    loseSessionLocked()
                    throw pkcs11Error("C_Login (per-signature)", loginValue)
                }
            }
            let (signValue, signature) = session.sign(digest, signatureByteCount: 2 * P256.scalarByteCount)
            if signValue == ReturnValue.userNotLoggedIn && contextLoginSucceeded && !restarted {
                // CKR_USER_NOT_LOGGED_IN after a good context login: start over once from C_SignInit.
                restarted = true
                continue
            }
            if signValue != ReturnValue.ok && ReturnValue.code(signValue) != .tokenRemoved { loseSessionLocked() }
            try check("C_Sign", signValue)
            guard signature.count == 2 * P256.scalarByteCount else {
                throw TokenError(.pkcs11, "C_Sign returned \(signature.count) bytes, not the 64 of a P-256 signature")
            }
            return signature
        }
    }

    // MARK: Key agreement

    /// ECDH on the token with CKM_ECDH1_DERIVE and CKD_NULL. The shared secret comes back as a session
    /// object that is read and destroyed at once.
    public func deriveSharedSecret(key: TokenKey, peer: P256.PublicKey) throws -> [UInt8] {
        announceTouch(for: key, operation: "unlock the wallet") // ECDH waits for a touch as a signature does
        return try withSession { session in
            var uri = PKCS11URI()
            uri.id = key.id
            let (handle, _) = try findPrivateKeyLocked(session, uri)
            let derived = try session.deriveECDH(handle, peerPoint: peer.x963)
            defer { try? session.destroyObject(derived) }
            guard let secret = try session.attribute(derived, Attribute.value), secret.count == 32 else {
                throw TokenError(.unsupported, "the token did not return a 32-byte ECDH secret")
            }
            return secret
        }
    }

    // MARK: Data objects

    /// The values of the private CKO_DATA objects with a given CKA_APPLICATION, with their labels.
    /// The wallet keeps its anchor in one (see SecureStore's `AnchorStorage`).
    public func dataObjects(application: String) throws -> [(label: String, value: [UInt8])] {
        try withSession { session in
            let handles = try session.findObjects([
                .number(Attribute.class, CK.classData), .bool(Attribute.token, true),
                .bytes(Attribute.application, Array(application.utf8)),
            ])
            return try handles.map { handle in
                (
                    String(decoding: try session.attribute(handle, Attribute.label) ?? [], as: UTF8.self),
                    try session.attribute(handle, Attribute.value) ?? []
                )
            }
        }
    }

    /// Writes a private CKO_DATA token object, then destroys the other objects of the same application
    /// and label. Creating before destroying means a crash leaves the old value or both, never neither.
    public func replaceDataObject(application: String, label: String, value: [UInt8]) throws {
        try withSession { session in
            let identity: [AttributeValue] = [
                .number(Attribute.class, CK.classData), .bool(Attribute.token, true),
                .bytes(Attribute.application, Array(application.utf8)),
                .bytes(Attribute.label, Array(label.utf8)),
            ]
            let old = try session.findObjects(identity)
            _ = try session.createObject(
                identity + [
                    .bool(Attribute.private, true), .bool(Attribute.modifiable, true),
                    .bytes(Attribute.value, value),
                ])
            for handle in old { try session.destroyObject(handle) }
        }
    }

    /// Destroys the CKO_DATA objects of an application and label.
    public func destroyDataObjects(application: String, label: String) throws {
        try withSession { session in
            for handle in try session.findObjects([
                .number(Attribute.class, CK.classData), .bool(Attribute.token, true),
                .bytes(Attribute.application, Array(application.utf8)),
                .bytes(Attribute.label, Array(label.utf8)),
            ]) {
                try session.destroyObject(handle)
            }
        }
    }

    // MARK: Benchmark

    /// Runs `loop`, a benchmark's C baseline loop (SecureBench's, over CPKCS11Baseline), on this session
    /// with `key`: under the session's lock, as every wallet call is, with the key's handle found the same
    /// way. The raw handles and the PIN's bytes are valid only inside `loop`. Anything but CKR_OK that the
    /// loop returns is thrown with its C name, reported as `function`.
    @_spi(Benchmark) public func withRawSigningSession(
        key: TokenKey, function: String,
        _ loop: (RawSigningSession) -> UInt
    ) throws {
        try withSession { session in
            var uri = PKCS11URI()
            uri.id = key.id
            let (handle, alwaysAuthenticate) = try findPrivateKeyLocked(session, uri)
            guard let pin = heldPIN else { throw TokenError(.pinUnavailable, "the token is locked") }
            let value = try pin.withBytes { bytes, length in
                session.withRawSession { functions, sessionHandle in
                    loop(
                        RawSigningSession(
                            functionList: functions, session: sessionHandle, key: handle,
                            needsContextLogin: alwaysAuthenticate, pin: bytes, pinByteCount: length))
                }
            }
            try check(function, value)
        }
    }

    /// How many PKCS#11 functions this process has called on the session's module so far, counted in
    /// the wrappers. The difference across one operation is the number of token operations it cost.
    public var moduleCallCount: Int { token.module.callCount }

    /// Runs C_SignInit and C_Sign without the per-signature login, for the test that the token enforces it.
    /// Internal (tests reach it through `@testable import`): a public way to sign without the login
    /// would undo what the login is for.
    func signWithoutContextLoginForTesting(key: TokenKey, digest: [UInt8]) throws {
        try withSession { session in
            var uri = PKCS11URI()
            uri.id = key.id
            let (handle, _) = try findPrivateKeyLocked(session, uri)
            try check("C_SignInit", session.signInitECDSA(handle))
            let (value, _) = session.sign(digest, signatureByteCount: 64)
            if value != ReturnValue.ok { loseSessionLocked() }
            try check("C_Sign", value)
        }
    }
}

/// CKA_EC_POINT decoding.
enum ECPoint {
    static func publicKey(fromAttribute point: [UInt8]) throws -> P256.PublicKey {
        switch point.count {
        case 65:
            return try P256.PublicKey(x963: point)
        case 67 where point[0] == 0x04 && point[1] == 0x41:
            return try P256.PublicKey(x963: Array(point[2...]))
        default:
            throw TokenError(
                .keyRefused, "CKA_EC_POINT has \(point.count) bytes; expected 65 (raw) or 67 (DER OCTET STRING)")
        }
    }
}

/// What a benchmark's C baseline loop needs to run on a token session, handed out only inside
/// `TokenSession.withRawSigningSession`: keep none of it past that closure.
@_spi(Benchmark) public struct RawSigningSession {
    /// The module's `CK_FUNCTION_LIST *`, untyped so that no C type leaves SecureToken.
    public let functionList: OpaquePointer
    /// The session's `CK_SESSION_HANDLE`.
    public let session: UInt
    /// The signing key's `CK_OBJECT_HANDLE`.
    public let key: UInt
    /// Whether each signature needs `C_Login(CKU_CONTEXT_SPECIFIC)` first (the key's CKA_ALWAYS_AUTHENTICATE).
    public let needsContextLogin: Bool
    /// The held PIN's bytes, for that login.
    public let pin: UnsafeMutablePointer<UInt8>
    /// How many bytes `pin` holds.
    public let pinByteCount: Int
}
