internal import CP11Kit
import Foundation
import Synchronization

// Every call into PKCS#11 and p11-kit goes through this file, and every return value is checked where
// the call is made. Nothing outside this file sees a C type.

typealias ObjectHandle = UInt
typealias SlotID = UInt

/// PKCS#11 constants used by the wallet: the header's own constants (p11-kit's pkcs11.h, PKCS#11 2.40),
/// so no number is copied by hand.
enum CK {
    static let userSO = CKU_SO, user = CKU_USER, contextSpecific = CKU_CONTEXT_SPECIFIC
    static let classPublicKey = CKO_PUBLIC_KEY, classPrivateKey = CKO_PRIVATE_KEY, classData = CKO_DATA
    static let classSecretKey = CKO_SECRET_KEY, classCertificate = CKO_CERTIFICATE
    static let keyTypeEC = CKK_EC, keyTypeGenericSecret = CKK_GENERIC_SECRET
    static let mechanismECKeyPairGen = CKM_EC_KEY_PAIR_GEN, mechanismECDSA = CKM_ECDSA
    static let mechanismECDH1Derive = CKM_ECDH1_DERIVE
    static let keyTypeRSA = CKK_RSA, mechanismRSAKeyPairGen = CKM_RSA_PKCS_KEY_PAIR_GEN
    static let mechanismRSAOAEP = CKM_RSA_PKCS_OAEP
    static let mechanismSHA256 = CKM_SHA256, mgf1SHA256 = CKG_MGF1_SHA256, oaepSourceDataSpecified = CKZ_DATA_SPECIFIED
    static let kdfNull = CKD_NULL
    static let sessionSerial = CKF_SERIAL_SESSION, sessionReadWrite = CKF_RW_SESSION
    static let osLockingOK = CKF_OS_LOCKING_OK
    /// CK_UNAVAILABLE_INFORMATION, ~0; the header spells it as a cast Swift does not import.
    static let unavailableInformation = UInt.max
}

/// Attribute types: the header's CKA_ constants.
enum Attribute {
    static let `class` = CKA_CLASS, token = CKA_TOKEN, `private` = CKA_PRIVATE, label = CKA_LABEL
    static let application = CKA_APPLICATION, value = CKA_VALUE
    static let keyType = CKA_KEY_TYPE, id = CKA_ID, sensitive = CKA_SENSITIVE, encrypt = CKA_ENCRYPT
    static let decrypt = CKA_DECRYPT, wrap = CKA_WRAP, unwrap = CKA_UNWRAP, sign = CKA_SIGN
    static let signRecover = CKA_SIGN_RECOVER, verify = CKA_VERIFY, derive = CKA_DERIVE
    static let valueLength = CKA_VALUE_LEN, extractable = CKA_EXTRACTABLE, local = CKA_LOCAL
    static let neverExtractable = CKA_NEVER_EXTRACTABLE, alwaysSensitive = CKA_ALWAYS_SENSITIVE
    static let modifiable = CKA_MODIFIABLE
    static let ecParams = CKA_EC_PARAMS, ecPoint = CKA_EC_POINT, alwaysAuthenticate = CKA_ALWAYS_AUTHENTICATE
    static let modulus = CKA_MODULUS, modulusBits = CKA_MODULUS_BITS, publicExponent = CKA_PUBLIC_EXPONENT
}

/// Token flags: the header's CKF_ constants.
enum TokenFlag {
    static let loginRequired = CKF_LOGIN_REQUIRED, userPINInitialized = CKF_USER_PIN_INITIALIZED
    static let protectedAuthenticationPath = CKF_PROTECTED_AUTHENTICATION_PATH, tokenInitialized = CKF_TOKEN_INITIALIZED
    static let userPINCountLow = CKF_USER_PIN_COUNT_LOW, userPINFinalTry = CKF_USER_PIN_FINAL_TRY
    static let userPINLocked = CKF_USER_PIN_LOCKED, userPINToBeChanged = CKF_USER_PIN_TO_BE_CHANGED
}

/// One attribute value for a template.
enum AttributeValue {
    case bool(UInt, Bool)
    case number(UInt, UInt)
    case bytes(UInt, [UInt8])
}

/// Owns the memory a C template points into, for exactly as long as one call needs it.
final class Template {
    private(set) var attributes: [CK_ATTRIBUTE] = []
    private var buffers: [UnsafeMutableRawBufferPointer] = []

    init(_ values: [AttributeValue]) {
        for value in values {
            switch value {
            case .bool(let type, let flag): append(type, [flag ? 1 : 0])
            case .number(let type, var number): append(type, withUnsafeBytes(of: &number) { Array($0) })
            case .bytes(let type, let bytes): append(type, bytes)
            }
        }
    }

    private func append(_ type: UInt, _ bytes: [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
        buffer.copyBytes(from: bytes)
        buffers.append(buffer)
        attributes.append(CK_ATTRIBUTE(type: type, pValue: buffer.baseAddress, ulValueLen: UInt(bytes.count)))
    }

    deinit { buffers.forEach { $0.deallocate() } }
}

/// An error for a failed C_* call, with the function's name.
func pkcs11Error(_ function: String, _ value: UInt) -> TokenError {
    TokenError(
        ReturnValue.code(value), "\(function): \(ReturnValue.sentence(value))", returnValueName: ReturnValue.name(value)
    )
}

/// A loaded PKCS#11 module. p11-kit loads it unmanaged, so this process calls C_Initialize itself: with
/// OS locking and the module's init args, tolerating CKR_CRYPTOKI_ALREADY_INITIALIZED, and finalizing
/// only what it initialized.
final class Module: @unchecked Sendable {
    /// The name p11-kit registers, or the path it was loaded from.
    let name: String
    /// The shared library's file name.
    let path: String
    private let functions: UnsafeMutablePointer<CK_FUNCTION_LIST>
    private(set) var initializedHere = false
    private let lock = NSLock()
    /// Calls made through `list`, i.e. into the module by this process (the ledger benchmark counts the
    /// token operations of one append with it). Relaxed: it is a statistic, not a synchronization point.
    private let calls = Atomic<Int>(0)

    private init(name: String, path: String, functions: UnsafeMutablePointer<CK_FUNCTION_LIST>) {
        self.name = name
        self.path = path
        self.functions = functions
    }

    deinit {
        finalize()
        p11_kit_module_release(functions)
    }

    /// Loads every module p11-kit has registered, without initializing any.
    static func loadRegistered() -> [Module] {
        guard let list = p11_kit_modules_load(nil, Int32(P11_KIT_MODULE_UNMANAGED)) else { return [] }
        defer { free(list) } // the array only; each module is released by its Module
        var modules: [Module] = []
        var index = 0
        while let functions = list[index] {
            let name = takeString(p11_kit_module_get_name(functions)) ?? "module-\(index)"
            let path = takeString(p11_kit_module_get_filename(functions)) ?? name
            modules.append(Module(name: name, path: path, functions: functions))
            index += 1
        }
        return modules
    }

    /// Loads a module by the path of its shared library, for modules that ship no p11-kit file (ykcs11).
    static func load(path: String) throws -> Module {
        guard FileManager.default.fileExists(atPath: path) else {
            throw TokenError(.moduleNotFound, "no PKCS#11 module at \(path)")
        }
        guard let functions = p11_kit_module_load(path, Int32(P11_KIT_MODULE_UNMANAGED)) else {
            let reason = p11_kit_message().map { String(cString: $0) } ?? "unknown reason"
            throw TokenError(.moduleNotFound, "p11-kit could not load the module \(path): \(reason)")
        }
        return Module(name: path, path: path, functions: functions)
    }

    /// The init args p11-kit's module file gives as `x-init-reserved`, if any.
    var registeredInitArguments: String? {
        takeString(p11_kit_config_option(functions, "x-init-reserved"))
    }

    /// Initializes the module once. `initArguments` goes to pReserved (NSS softokn needs it).
    func initialize(initArguments: String?) throws {
        try lock.withLock {
            guard !initializedHere else { return }
            let reserved = (initArguments ?? registeredInitArguments).map { strdup($0) } ?? nil
            defer { free(reserved) }
            var arguments = CK_C_INITIALIZE_ARGS(
                CreateMutex: nil, DestroyMutex: nil, LockMutex: nil,
                UnlockMutex: nil, flags: CK.osLockingOK, pReserved: UnsafeMutableRawPointer(reserved))
            let value = functions.pointee.C_Initialize(&arguments)
            switch value {
            case ReturnValue.ok: initializedHere = true
            case ReturnValue.cryptokiAlreadyInitialized: initializedHere = false // someone else owns it
            default: throw pkcs11Error("C_Initialize of \(name)", value)
            }
        }
    }

    /// Finalizes the module if, and only if, this process initialized it.
    func finalize() {
        lock.withLock {
            guard initializedHere else { return }
            _ = functions.pointee.C_Finalize(nil)
            initializedHere = false
        }
    }

    /// The module's description and manufacturer from C_GetInfo.
    func info() throws -> (description: String, manufacturer: String, version: String) {
        var info = CK_INFO()
        try check("C_GetInfo", functions.pointee.C_GetInfo(&info))
        return (
            padded(info.libraryDescription), padded(info.manufacturerID),
            "\(info.libraryVersion.major).\(info.libraryVersion.minor)"
        )
    }

    /// Slots with a token present.
    func slotsWithTokens() throws -> [SlotID] { try slotList(tokenPresent: true) }

    /// C_GetTokenInfo, as plain values.
    func tokenInfo(_ slot: SlotID) throws -> TokenInfo {
        var info = CK_TOKEN_INFO()
        try check("C_GetTokenInfo", functions.pointee.C_GetTokenInfo(slot, &info))
        var slotInfo = CK_SLOT_INFO()
        try check("C_GetSlotInfo", functions.pointee.C_GetSlotInfo(slot, &slotInfo))
        return TokenInfo(
            label: padded(info.label), manufacturer: padded(info.manufacturerID),
            model: padded(info.model), serial: padded(info.serialNumber), flags: info.flags,
            sessionCount: info.ulSessionCount,
            slotDescription: padded(slotInfo.slotDescription),
            slotManufacturer: padded(slotInfo.manufacturerID),
            hardwareVersion: "\(info.hardwareVersion.major).\(info.hardwareVersion.minor)",
            firmwareVersion: "\(info.firmwareVersion.major).\(info.firmwareVersion.minor)")
    }

    /// Whether the slot still holds a token, asked after a failure that does not say why (OpenSC answers a
    /// card pulled in the middle of a signature with CKR_GENERAL_ERROR): C_GetSlotInfo's CKF_TOKEN_PRESENT,
    /// then a C_GetTokenInfo that succeeds. A slot that cannot be asked (its reader or pcscd gone) holds none.
    func tokenPresent(_ slot: SlotID) -> Bool {
        var slotInfo = CK_SLOT_INFO()
        guard list.C_GetSlotInfo(slot, &slotInfo) == ReturnValue.ok, slotInfo.flags & UInt(CKF_TOKEN_PRESENT) != 0
        else { return false }
        var info = CK_TOKEN_INFO()
        return list.C_GetTokenInfo(slot, &info) == ReturnValue.ok
    }

    /// Whether the token offers a mechanism.
    func supports(_ slot: SlotID, mechanism: UInt) -> Bool {
        var info = CK_MECHANISM_INFO()
        return functions.pointee.C_GetMechanismInfo(slot, mechanism, &info) == ReturnValue.ok
    }

    /// C_InitToken: used only by `token init-demo` on SoftHSM slots that hold no token yet.
    func initToken(_ slot: SlotID, soPIN: PIN, label: String) throws {
        var labelBytes = [UInt8](repeating: 0x20, count: 32)
        for (index, byte) in label.utf8.prefix(32).enumerated() { labelBytes[index] = byte }
        try soPIN.withBytes { pin, length in
            try check("C_InitToken", functions.pointee.C_InitToken(slot, pin, UInt(length), &labelBytes))
        }
    }

    /// Every slot, with or without a token (SoftHSM's free slot has an uninitialized token).
    func allSlots() throws -> [SlotID] { try slotList(tokenPresent: false) }

    /// C_GetSlotList: the size query, then the list.
    private func slotList(tokenPresent: Bool) throws -> [SlotID] {
        let present: UInt8 = tokenPresent ? 1 : 0
        var count: UInt = 0
        try check("C_GetSlotList", functions.pointee.C_GetSlotList(present, nil, &count))
        var slots = [UInt](repeating: 0, count: Int(count))
        try check("C_GetSlotList", functions.pointee.C_GetSlotList(present, &slots, &count))
        return Array(slots.prefix(Int(count)))
    }

    /// Opens a serial session.
    func openSession(_ slot: SlotID, readWrite: Bool) throws -> SessionHandle {
        var handle: UInt = 0
        let flags = CK.sessionSerial | (readWrite ? CK.sessionReadWrite : 0)
        try check("C_OpenSession", functions.pointee.C_OpenSession(slot, flags, nil, nil, &handle))
        return SessionHandle(module: self, handle: handle)
    }

    /// Closes every session this process has on a slot; tests use it to lose sessions on purpose.
    func closeAllSessions(_ slot: SlotID) throws {
        try check("C_CloseAllSessions", functions.pointee.C_CloseAllSessions(slot))
    }

    /// How many session handles up to `handleMax` the module says are open on `slot` (C_GetSessionInfo
    /// succeeds and names the slot), for tokens such as SoftHSM that do not report ulSessionCount. Tests
    /// use it to find leaks; counting one slot keeps other tests' tokens on the same module out of it.
    func probeOpenSessions(_ slot: SlotID, handleMax: UInt) -> Int {
        var info = CK_SESSION_INFO()
        return (1...handleMax).filter {
            functions.pointee.C_GetSessionInfo($0, &info) == ReturnValue.ok && info.slotID == slot
        }.count
    }

    /// The function list, for the C baseline benchmark in this module only.
    var rawFunctionList: UnsafeMutablePointer<CK_FUNCTION_LIST> { functions }

    /// Every call in this file goes through here, once per C_ function called, so it is also where the
    /// calls are counted.
    fileprivate var list: CK_FUNCTION_LIST {
        calls.add(1, ordering: .relaxed)
        return functions.pointee
    }

    /// How many PKCS#11 functions this process has called on the module through the wrappers.
    var callCount: Int { calls.load(ordering: .relaxed) }
}

/// Plain values from C_GetTokenInfo and C_GetSlotInfo.
struct TokenInfo: Sendable {
    let label, manufacturer, model, serial: String
    let flags: UInt
    let sessionCount: UInt
    let slotDescription, slotManufacturer: String
    /// CK_VERSION as "major.minor" (ykcs11 reports a YubiKey's firmware 5.4.3 as "5.43").
    var hardwareVersion = "", firmwareVersion = ""
}

/// One open session handle. It closes itself when released, so no session leaks.
final class SessionHandle {
    let module: Module
    let handle: UInt
    private var open = true

    fileprivate init(module: Module, handle: UInt) {
        self.module = module
        self.handle = handle
    }

    deinit { close() }

    /// Closes the session; a second close does nothing.
    func close() {
        guard open else { return }
        open = false
        _ = module.list.C_CloseSession(handle)
    }

    /// C_Login, returning the raw return value so callers can tell CKR_PIN_INCORRECT and
    /// CKR_USER_ALREADY_LOGGED_IN apart.
    func login(userType: UInt, pin: PIN) throws -> UInt {
        try pin.withBytes { bytes, length in module.list.C_Login(handle, userType, bytes, UInt(length)) }
    }

    /// C_Logout; CKR_USER_NOT_LOGGED_IN is fine.
    func logout() {
        _ = module.list.C_Logout(handle)
    }

    /// C_InitPIN, as the SO.
    func initPIN(_ pin: PIN) throws {
        try pin.withBytes { bytes, length in
            try check("C_InitPIN", module.list.C_InitPIN(handle, bytes, UInt(length)))
        }
    }

    /// Finds object handles matching a template (bounded: a token with more matches is refused).
    func findObjects(_ values: [AttributeValue], limit: Int = 256) throws -> [ObjectHandle] {
        let template = Template(values)
        var attributes = template.attributes
        try check("C_FindObjectsInit", module.list.C_FindObjectsInit(handle, &attributes, UInt(attributes.count)))
        defer { _ = module.list.C_FindObjectsFinal(handle) }
        var found: [ObjectHandle] = []
        var batch = [UInt](repeating: 0, count: 64)
        while found.count <= limit {
            var count: UInt = 0
            try check("C_FindObjects", module.list.C_FindObjects(handle, &batch, UInt(batch.count), &count))
            if count == 0 { break }
            found += batch.prefix(Int(count))
        }
        return found
    }

    /// Reads one attribute; nil when the token says it is sensitive or unknown for this object.
    func attribute(_ object: ObjectHandle, _ type: UInt) throws -> [UInt8]? {
        var probe = CK_ATTRIBUTE(type: type, pValue: nil, ulValueLen: 0)
        let first = module.list.C_GetAttributeValue(handle, object, &probe, 1)
        if first == CKR_ATTRIBUTE_SENSITIVE || first == CKR_ATTRIBUTE_TYPE_INVALID
            || probe.ulValueLen == CK.unavailableInformation
        {
            return nil
        }
        try check("C_GetAttributeValue", first)
        var buffer = [UInt8](repeating: 0, count: Int(probe.ulValueLen))
        let value: UInt = buffer.withUnsafeMutableBytes { bytes in
            var attribute = CK_ATTRIBUTE(type: type, pValue: bytes.baseAddress, ulValueLen: UInt(bytes.count))
            let result = module.list.C_GetAttributeValue(handle, object, &attribute, 1)
            return result
        }
        try check("C_GetAttributeValue", value)
        return buffer
    }

    /// C_GenerateKeyPair with the EC mechanism; returns (public, private) handles.
    func generateECKeyPair(publicTemplate: [AttributeValue], privateTemplate: [AttributeValue]) throws -> (
        ObjectHandle, ObjectHandle
    ) {
        try generateKeyPair(CK.mechanismECKeyPairGen, publicTemplate: publicTemplate, privateTemplate: privateTemplate)
    }

    /// C_GenerateKeyPair with CKM_RSA_PKCS_KEY_PAIR_GEN; returns (public, private) handles.
    func generateRSAKeyPair(publicTemplate: [AttributeValue], privateTemplate: [AttributeValue]) throws -> (
        ObjectHandle, ObjectHandle
    ) {
        try generateKeyPair(CK.mechanismRSAKeyPairGen, publicTemplate: publicTemplate, privateTemplate: privateTemplate)
    }

    /// C_GenerateKeyPair with a parameterless mechanism; returns (public, private) handles.
    private func generateKeyPair(
        _ mechanismType: UInt, publicTemplate: [AttributeValue],
        privateTemplate: [AttributeValue]
    ) throws -> (ObjectHandle, ObjectHandle) {
        var mechanism = CK_MECHANISM(mechanism: mechanismType, pParameter: nil, ulParameterLen: 0)
        let publicOwner = Template(publicTemplate), privateOwner = Template(privateTemplate)
        var publicAttributes = publicOwner.attributes, privateAttributes = privateOwner.attributes
        var publicKey: UInt = 0, privateKey: UInt = 0
        try check(
            "C_GenerateKeyPair",
            module.list.C_GenerateKeyPair(
                handle, &mechanism, &publicAttributes, UInt(publicAttributes.count),
                &privateAttributes, UInt(privateAttributes.count), &publicKey, &privateKey))
        return (publicKey, privateKey)
    }

    /// C_DecryptInit and C_Decrypt with CKM_RSA_PKCS_OAEP (SHA-256, MGF1-SHA-256, empty label), into a
    /// buffer of `outputByteCountMax` bytes: no size query, so the operation is one call. The caller wipes
    /// the result.
    func decryptRSAOAEP(_ key: ObjectHandle, ciphertext: [UInt8], outputByteCountMax: Int) throws -> [UInt8] {
        var parameters = CK_RSA_PKCS_OAEP_PARAMS(
            hashAlg: CK.mechanismSHA256, mgf: CK.mgf1SHA256,
            source: CK.oaepSourceDataSpecified, pSourceData: nil, ulSourceDataLen: 0)
        try withUnsafeMutableBytes(of: &parameters) { parameterBytes in
            var mechanism = CK_MECHANISM(
                mechanism: CK.mechanismRSAOAEP, pParameter: parameterBytes.baseAddress,
                ulParameterLen: UInt(parameterBytes.count))
            try check("C_DecryptInit", module.list.C_DecryptInit(handle, &mechanism, key))
        }
        var input = ciphertext
        var output = [UInt8](repeating: 0, count: outputByteCountMax)
        var length = UInt(outputByteCountMax)
        let value = module.list.C_Decrypt(handle, &input, UInt(input.count), &output, &length)
        guard value == ReturnValue.ok else {
            output.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) }
            throw pkcs11Error("C_Decrypt", value)
        }
        let plaintext = Array(output.prefix(Int(min(length, UInt(outputByteCountMax)))))
        output.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) }
        return plaintext
    }

    /// C_CreateObject.
    func createObject(_ values: [AttributeValue]) throws -> ObjectHandle {
        let owner = Template(values)
        var attributes = owner.attributes
        var object: UInt = 0
        try check("C_CreateObject", module.list.C_CreateObject(handle, &attributes, UInt(attributes.count), &object))
        return object
    }

    /// C_SetAttributeValue.
    func setAttributes(_ object: ObjectHandle, _ values: [AttributeValue]) throws {
        let owner = Template(values)
        var attributes = owner.attributes
        try check(
            "C_SetAttributeValue", module.list.C_SetAttributeValue(handle, object, &attributes, UInt(attributes.count)))
    }

    /// C_DestroyObject.
    func destroyObject(_ object: ObjectHandle) throws {
        try check("C_DestroyObject", module.list.C_DestroyObject(handle, object))
    }

    /// C_SignInit with raw CKM_ECDSA; the raw return value is handed back.
    func signInitECDSA(_ key: ObjectHandle) -> UInt {
        var mechanism = CK_MECHANISM(mechanism: CK.mechanismECDSA, pParameter: nil, ulParameterLen: 0)
        return module.list.C_SignInit(handle, &mechanism, key)
    }

    /// C_Sign into a buffer of exactly `signatureByteCount` bytes: no size query, because a size query
    /// between the context login and the signature would end the operation on some tokens.
    func sign(_ digest: [UInt8], signatureByteCount: Int) -> (UInt, [UInt8]) {
        var signature = [UInt8](repeating: 0, count: signatureByteCount)
        var length = UInt(signatureByteCount)
        var input = digest
        let value = module.list.C_Sign(handle, &input, UInt(input.count), &signature, &length)
        return (value, Array(signature.prefix(Int(min(length, UInt(signatureByteCount))))))
    }

    /// C_DeriveKey with CKM_ECDH1_DERIVE and CKD_NULL. The result is a session object: 32 bytes of
    /// CKK_GENERIC_SECRET, extractable and not sensitive, read and destroyed by the caller.
    func deriveECDH(_ key: ObjectHandle, peerPoint: [UInt8]) throws -> ObjectHandle {
        var point = peerPoint
        return try point.withUnsafeMutableBufferPointer { pointBuffer in
            var parameters = CK_ECDH1_DERIVE_PARAMS(
                kdf: CK.kdfNull, ulSharedDataLen: 0, pSharedData: nil,
                ulPublicDataLen: UInt(pointBuffer.count),
                pPublicData: pointBuffer.baseAddress)
            return try withUnsafeMutableBytes(of: &parameters) { parameterBytes in
                var mechanism = CK_MECHANISM(
                    mechanism: CK.mechanismECDH1Derive, pParameter: parameterBytes.baseAddress,
                    ulParameterLen: UInt(parameterBytes.count))
                let owner = Template([
                    .number(Attribute.class, CK.classSecretKey), .number(Attribute.keyType, CK.keyTypeGenericSecret),
                    .bool(Attribute.token, false), .bool(Attribute.sensitive, false),
                    .bool(Attribute.extractable, true), .number(Attribute.valueLength, 32),
                ])
                var attributes = owner.attributes
                var derived: UInt = 0
                try check(
                    "C_DeriveKey",
                    module.list.C_DeriveKey(
                        handle, &mechanism, key, &attributes,
                        UInt(attributes.count), &derived))
                return derived
            }
        }
    }

    /// The module's function list (untyped, so that no C type leaves this file) and this session's handle,
    /// for a benchmark's C baseline loop (`TokenSession.withRawSigningSession`); valid only inside `body`.
    func withRawSession<Result>(_ body: (OpaquePointer, UInt) throws -> Result) rethrows -> Result {
        try body(OpaquePointer(module.rawFunctionList), handle)
    }
}

/// Throws the C name and a sentence for anything but CKR_OK.
func check(_ function: String, _ value: UInt) throws {
    guard value == ReturnValue.ok else { throw pkcs11Error(function, value) }
}

/// A blank-padded fixed-width PKCS#11 string field, trimmed.
private func padded<T>(_ field: T) -> String {
    withUnsafeBytes(of: field) { bytes in
        String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: " \0"))
    }
}

/// Takes ownership of a malloc'd C string from p11-kit.
private func takeString(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
    guard let pointer else { return nil }
    defer { free(pointer) }
    return String(cString: pointer)
}
