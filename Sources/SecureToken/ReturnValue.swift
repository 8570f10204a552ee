internal import CP11Kit
import Foundation

/// PKCS#11 return values by C name, with a sentence for the ones a user can meet and act on. The table
/// follows PKCS#11 2.40 section 5.1; values not listed print as hex. Every value is the header's own
/// constant (p11-kit's pkcs11.h through CP11Kit), so a name and its number cannot drift apart; the test
/// `returnValueNamesMatchTheHeader` checks each name string against the header too. Only constants come
/// from the C module here: every C call stays in PKCS11.swift.
enum ReturnValue {
    // The values the rest of SecureToken tests for, under the header's names, for the files that do not
    // import CP11Kit.
    static let ok = CKR_OK
    static let generalError = CKR_GENERAL_ERROR
    static let attributeValueInvalid = CKR_ATTRIBUTE_VALUE_INVALID
    static let operationActive = CKR_OPERATION_ACTIVE
    static let pinIncorrect = CKR_PIN_INCORRECT
    static let pinLocked = CKR_PIN_LOCKED
    static let templateInconsistent = CKR_TEMPLATE_INCONSISTENT
    /// Another session of this process holds the token's login.
    static let userAlreadyLoggedIn = CKR_USER_ALREADY_LOGGED_IN
    /// The operation needs a login (for a signature, the per-signature one).
    static let userNotLoggedIn = CKR_USER_NOT_LOGGED_IN
    /// Another user of the module in this process initialized it.
    static let cryptokiAlreadyInitialized = CKR_CRYPTOKI_ALREADY_INITIALIZED
    /// The values tests name (ExitCauseTests).
    static let functionNotSupported = CKR_FUNCTION_NOT_SUPPORTED, mechanismInvalid = CKR_MECHANISM_INVALID
    static let deviceRemoved = CKR_DEVICE_REMOVED, tokenNotPresent = CKR_TOKEN_NOT_PRESENT
    /// CKR_VENDOR_DEFINED, 1 << 31; the header spells it as a cast Swift does not import.
    static let vendorDefined: UInt = 1 << 31

    /// The C name of a CK_RV.
    static func name(_ value: UInt) -> String {
        if let entry = table[value] { return entry.name }
        if value >= vendorDefined { return String(format: "CKR_VENDOR_DEFINED+0x%lx", value - vendorDefined) }
        return "CKR_0x" + String(value, radix: 16)
    }

    /// A sentence for a person, naming what to do where there is something to do.
    static func sentence(_ value: UInt) -> String {
        table[value]?.sentence ?? "the token reported an error"
    }

    /// The error code a return value maps to.
    static func code(_ value: UInt) -> TokenError.Code {
        switch value {
        case CKR_PIN_INCORRECT: return .pinIncorrect
        case CKR_PIN_LOCKED: return .pinLocked
        case CKR_DEVICE_REMOVED, CKR_TOKEN_NOT_PRESENT, CKR_SESSION_HANDLE_INVALID,
            CKR_SESSION_CLOSED, CKR_DEVICE_ERROR:
            return .tokenRemoved
        case CKR_KEY_HANDLE_INVALID, CKR_OBJECT_HANDLE_INVALID: return .keyNotFound
        case CKR_FUNCTION_NOT_SUPPORTED, CKR_MECHANISM_INVALID, CKR_CURVE_NOT_SUPPORTED: return .unsupported
        default: return .pkcs11
        }
    }

    /// Every return value the table names, as (value, C name, sentence), in the header's order.
    static var entries: [(value: UInt, name: String, sentence: String)] { rows }

    private static let table: [UInt: (name: String, sentence: String)] =
        Dictionary(uniqueKeysWithValues: rows.map { ($0.value, (name: $0.name, sentence: $0.sentence)) })

    private static let rows: [(value: UInt, name: String, sentence: String)] = [
        (CKR_OK, "CKR_OK", "success"),
        (CKR_CANCEL, "CKR_CANCEL", "the operation was cancelled"),
        (CKR_HOST_MEMORY, "CKR_HOST_MEMORY", "the token module ran out of memory"),
        (CKR_SLOT_ID_INVALID, "CKR_SLOT_ID_INVALID", "the slot no longer exists; was the reader unplugged?"),
        (
            CKR_GENERAL_ERROR, "CKR_GENERAL_ERROR",
            "the token module failed; try again, and reinsert the token if it persists"
        ),
        (CKR_FUNCTION_FAILED, "CKR_FUNCTION_FAILED", "the token could not carry out the operation"),
        (
            CKR_ARGUMENTS_BAD, "CKR_ARGUMENTS_BAD",
            "the module refused its arguments (some modules, such as NSS softokn, need init args)"
        ),
        (CKR_CANT_LOCK, "CKR_CANT_LOCK", "the module cannot do the thread locking this program needs"),
        (CKR_ATTRIBUTE_READ_ONLY, "CKR_ATTRIBUTE_READ_ONLY", "the token will not change that attribute"),
        (CKR_ATTRIBUTE_SENSITIVE, "CKR_ATTRIBUTE_SENSITIVE", "the token keeps that value secret, as it should"),
        (CKR_ATTRIBUTE_TYPE_INVALID, "CKR_ATTRIBUTE_TYPE_INVALID", "the token does not know that attribute"),
        (CKR_ATTRIBUTE_VALUE_INVALID, "CKR_ATTRIBUTE_VALUE_INVALID", "the token refused an attribute value"),
        (CKR_ACTION_PROHIBITED, "CKR_ACTION_PROHIBITED", "the token's policy forbids this action"),
        (CKR_DATA_INVALID, "CKR_DATA_INVALID", "the token refused the data"),
        (CKR_DATA_LEN_RANGE, "CKR_DATA_LEN_RANGE", "the data has a length the token refuses"),
        (CKR_DEVICE_ERROR, "CKR_DEVICE_ERROR", "the token failed; reinsert it and try again"),
        (CKR_DEVICE_MEMORY, "CKR_DEVICE_MEMORY", "the token is out of memory; delete unused objects"),
        (CKR_DEVICE_REMOVED, "CKR_DEVICE_REMOVED", "the token was removed during the operation; reinsert it and retry"),
        (CKR_FUNCTION_CANCELED, "CKR_FUNCTION_CANCELED", "the operation was cancelled"),
        (CKR_FUNCTION_NOT_SUPPORTED, "CKR_FUNCTION_NOT_SUPPORTED", "the token does not support this function"),
        (CKR_KEY_HANDLE_INVALID, "CKR_KEY_HANDLE_INVALID", "the key handle is no longer valid"),
        (CKR_KEY_SIZE_RANGE, "CKR_KEY_SIZE_RANGE", "the token does not support that key size"),
        (CKR_KEY_TYPE_INCONSISTENT, "CKR_KEY_TYPE_INCONSISTENT", "the key is of the wrong type for this mechanism"),
        (CKR_KEY_FUNCTION_NOT_PERMITTED, "CKR_KEY_FUNCTION_NOT_PERMITTED", "the key's attributes forbid this use"),
        (CKR_KEY_UNEXTRACTABLE, "CKR_KEY_UNEXTRACTABLE", "the key cannot leave the token, as intended"),
        (CKR_MECHANISM_INVALID, "CKR_MECHANISM_INVALID", "the token does not offer this mechanism"),
        (CKR_MECHANISM_PARAM_INVALID, "CKR_MECHANISM_PARAM_INVALID", "the token refused the mechanism's parameters"),
        (CKR_OBJECT_HANDLE_INVALID, "CKR_OBJECT_HANDLE_INVALID", "the object handle is no longer valid"),
        (CKR_OPERATION_ACTIVE, "CKR_OPERATION_ACTIVE", "another operation is still active on this session"),
        (CKR_OPERATION_NOT_INITIALIZED, "CKR_OPERATION_NOT_INITIALIZED", "the operation was not started"),
        (CKR_PIN_INCORRECT, "CKR_PIN_INCORRECT", "the PIN is wrong; it was not retried, check it before trying again"),
        (CKR_PIN_INVALID, "CKR_PIN_INVALID", "the PIN has characters the token does not accept"),
        (CKR_PIN_LEN_RANGE, "CKR_PIN_LEN_RANGE", "the PIN is too short or too long for this token"),
        (CKR_PIN_EXPIRED, "CKR_PIN_EXPIRED", "the PIN has expired; set a new one with the token's own tool"),
        (
            CKR_PIN_LOCKED, "CKR_PIN_LOCKED",
            "the PIN is locked after too many wrong tries; unblock it with the SO PIN or PUK"
        ),
        (CKR_SESSION_CLOSED, "CKR_SESSION_CLOSED", "the session was closed during the operation"),
        (CKR_SESSION_COUNT, "CKR_SESSION_COUNT", "the token has too many open sessions"),
        (CKR_SESSION_HANDLE_INVALID, "CKR_SESSION_HANDLE_INVALID", "the session is gone; was the token removed?"),
        (CKR_SESSION_PARALLEL_NOT_SUPPORTED, "CKR_SESSION_PARALLEL_NOT_SUPPORTED", "the token needs serial sessions"),
        (CKR_SESSION_READ_ONLY, "CKR_SESSION_READ_ONLY", "the session is read-only"),
        (CKR_SESSION_EXISTS, "CKR_SESSION_EXISTS", "sessions are open, so the token cannot be initialized"),
        (
            CKR_SESSION_READ_ONLY_EXISTS, "CKR_SESSION_READ_ONLY_EXISTS",
            "a read-only session exists, so the SO cannot log in"
        ),
        (CKR_SESSION_READ_WRITE_SO_EXISTS, "CKR_SESSION_READ_WRITE_SO_EXISTS", "an SO session exists"),
        (CKR_SIGNATURE_INVALID, "CKR_SIGNATURE_INVALID", "the signature is invalid"),
        (CKR_SIGNATURE_LEN_RANGE, "CKR_SIGNATURE_LEN_RANGE", "the signature has the wrong length"),
        (CKR_TEMPLATE_INCOMPLETE, "CKR_TEMPLATE_INCOMPLETE", "the token needs more attributes to create the object"),
        (CKR_TEMPLATE_INCONSISTENT, "CKR_TEMPLATE_INCONSISTENT", "the token refused the combination of attributes"),
        (CKR_TOKEN_NOT_PRESENT, "CKR_TOKEN_NOT_PRESENT", "no token is in the slot; insert it and retry"),
        (CKR_TOKEN_NOT_RECOGNIZED, "CKR_TOKEN_NOT_RECOGNIZED", "the module does not recognize the token"),
        (CKR_TOKEN_WRITE_PROTECTED, "CKR_TOKEN_WRITE_PROTECTED", "the token is write-protected"),
        (CKR_USER_ALREADY_LOGGED_IN, "CKR_USER_ALREADY_LOGGED_IN", "the user is already logged in"),
        (CKR_USER_NOT_LOGGED_IN, "CKR_USER_NOT_LOGGED_IN", "the token needs a PIN login for this"),
        (
            CKR_USER_PIN_NOT_INITIALIZED, "CKR_USER_PIN_NOT_INITIALIZED",
            "the token reports no user PIN set; if it has one (it holds keys), try again: a software token "
                + "being written by another process can answer this for a moment. Never re-initialize a token that "
                + "holds keys: that erases them"
        ),
        (CKR_USER_TYPE_INVALID, "CKR_USER_TYPE_INVALID", "the token refused the login type"),
        (
            CKR_USER_ANOTHER_ALREADY_LOGGED_IN, "CKR_USER_ANOTHER_ALREADY_LOGGED_IN",
            "another user is logged in to the token"
        ),
        (CKR_USER_TOO_MANY_TYPES, "CKR_USER_TOO_MANY_TYPES", "too many users are logged in to the token"),
        (CKR_RANDOM_SEED_NOT_SUPPORTED, "CKR_RANDOM_SEED_NOT_SUPPORTED", "the token does not take random seeds"),
        (CKR_RANDOM_NO_RNG, "CKR_RANDOM_NO_RNG", "the token has no random number generator"),
        (CKR_DOMAIN_PARAMS_INVALID, "CKR_DOMAIN_PARAMS_INVALID", "the token refused the curve parameters"),
        (CKR_CURVE_NOT_SUPPORTED, "CKR_CURVE_NOT_SUPPORTED", "the token does not support P-256"),
        (CKR_BUFFER_TOO_SMALL, "CKR_BUFFER_TOO_SMALL", "the output buffer was too small"),
        (CKR_INFORMATION_SENSITIVE, "CKR_INFORMATION_SENSITIVE", "the token will not reveal that information"),
        (CKR_CRYPTOKI_NOT_INITIALIZED, "CKR_CRYPTOKI_NOT_INITIALIZED", "the module was not initialized"),
        (
            CKR_CRYPTOKI_ALREADY_INITIALIZED, "CKR_CRYPTOKI_ALREADY_INITIALIZED",
            "the module was already initialized in this process"
        ),
        (CKR_MUTEX_BAD, "CKR_MUTEX_BAD", "the module's locking failed"),
        (CKR_MUTEX_NOT_LOCKED, "CKR_MUTEX_NOT_LOCKED", "the module's locking failed"),
        (CKR_LIBRARY_LOAD_FAILED, "CKR_LIBRARY_LOAD_FAILED", "the module could not load a library it needs"),
        (CKR_PIN_TOO_WEAK, "CKR_PIN_TOO_WEAK", "the token refuses that PIN as too weak"),
        (CKR_PUBLIC_KEY_INVALID, "CKR_PUBLIC_KEY_INVALID", "the token refused the public key"),
        (CKR_FUNCTION_REJECTED, "CKR_FUNCTION_REJECTED", "the token or its user rejected the operation"),
    ]
}
