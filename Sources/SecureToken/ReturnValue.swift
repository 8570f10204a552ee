import Foundation

/// PKCS#11 return values by C name, with a sentence for the ones a user can meet and act on. The table
/// follows PKCS#11 2.40 section 5.1; values not listed print as hex.
enum ReturnValue {
    static let ok: UInt = 0

    /// The C name of a CK_RV.
    static func name(_ value: UInt) -> String {
        if let entry = table[value] { return entry.name }
        if value >= 0x8000_0000 { return String(format: "CKR_VENDOR_DEFINED+0x%lx", value - 0x8000_0000) }
        return "CKR_0x" + String(value, radix: 16)
    }

    /// A sentence for a person, naming what to do where there is something to do.
    static func sentence(_ value: UInt) -> String {
        table[value]?.sentence ?? "the token reported an error"
    }

    /// The error code a return value maps to.
    static func code(_ value: UInt) -> TokenError.Code {
        switch value {
        case 0xa0: return .pinIncorrect
        case 0xa4: return .pinLocked
        case 0x32, 0xe0, 0xb3, 0xb0, 0x30: return .tokenRemoved
        case 0x60, 0x82: return .keyNotFound
        case 0x54, 0x70, 0x140: return .unsupported
        default: return .pkcs11
        }
    }

    private static let table: [UInt: (name: String, sentence: String)] = [
        0x0: ("CKR_OK", "success"),
        0x1: ("CKR_CANCEL", "the operation was cancelled"),
        0x2: ("CKR_HOST_MEMORY", "the token module ran out of memory"),
        0x3: ("CKR_SLOT_ID_INVALID", "the slot no longer exists; was the reader unplugged?"),
        0x5: ("CKR_GENERAL_ERROR", "the token module failed; try again, and reinsert the token if it persists"),
        0x6: ("CKR_FUNCTION_FAILED", "the token could not carry out the operation"),
        0x7: ("CKR_ARGUMENTS_BAD", "the module refused its arguments (some modules, such as NSS softokn, need init args)"),
        0xa: ("CKR_CANT_LOCK", "the module cannot do the thread locking this program needs"),
        0x10: ("CKR_ATTRIBUTE_READ_ONLY", "the token will not change that attribute"),
        0x11: ("CKR_ATTRIBUTE_SENSITIVE", "the token keeps that value secret, as it should"),
        0x12: ("CKR_ATTRIBUTE_TYPE_INVALID", "the token does not know that attribute"),
        0x13: ("CKR_ATTRIBUTE_VALUE_INVALID", "the token refused an attribute value"),
        0x1b: ("CKR_ACTION_PROHIBITED", "the token's policy forbids this action"),
        0x20: ("CKR_DATA_INVALID", "the token refused the data"),
        0x21: ("CKR_DATA_LEN_RANGE", "the data has a length the token refuses"),
        0x30: ("CKR_DEVICE_ERROR", "the token failed; reinsert it and try again"),
        0x31: ("CKR_DEVICE_MEMORY", "the token is out of memory; delete unused objects"),
        0x32: ("CKR_DEVICE_REMOVED", "the token was removed during the operation; reinsert it and retry"),
        0x50: ("CKR_FUNCTION_CANCELED", "the operation was cancelled"),
        0x54: ("CKR_FUNCTION_NOT_SUPPORTED", "the token does not support this function"),
        0x60: ("CKR_KEY_HANDLE_INVALID", "the key handle is no longer valid"),
        0x62: ("CKR_KEY_SIZE_RANGE", "the token does not support that key size"),
        0x63: ("CKR_KEY_TYPE_INCONSISTENT", "the key is of the wrong type for this mechanism"),
        0x68: ("CKR_KEY_FUNCTION_NOT_PERMITTED", "the key's attributes forbid this use"),
        0x6a: ("CKR_KEY_UNEXTRACTABLE", "the key cannot leave the token, as intended"),
        0x70: ("CKR_MECHANISM_INVALID", "the token does not offer this mechanism"),
        0x71: ("CKR_MECHANISM_PARAM_INVALID", "the token refused the mechanism's parameters"),
        0x82: ("CKR_OBJECT_HANDLE_INVALID", "the object handle is no longer valid"),
        0x90: ("CKR_OPERATION_ACTIVE", "another operation is still active on this session"),
        0x91: ("CKR_OPERATION_NOT_INITIALIZED", "the operation was not started"),
        0xa0: ("CKR_PIN_INCORRECT", "the PIN is wrong; it was not retried, check it before trying again"),
        0xa1: ("CKR_PIN_INVALID", "the PIN has characters the token does not accept"),
        0xa2: ("CKR_PIN_LEN_RANGE", "the PIN is too short or too long for this token"),
        0xa3: ("CKR_PIN_EXPIRED", "the PIN has expired; set a new one with the token's own tool"),
        0xa4: ("CKR_PIN_LOCKED", "the PIN is locked after too many wrong tries; unblock it with the SO PIN or PUK"),
        0xb0: ("CKR_SESSION_CLOSED", "the session was closed during the operation"),
        0xb1: ("CKR_SESSION_COUNT", "the token has too many open sessions"),
        0xb3: ("CKR_SESSION_HANDLE_INVALID", "the session is gone; was the token removed?"),
        0xb4: ("CKR_SESSION_PARALLEL_NOT_SUPPORTED", "the token needs serial sessions"),
        0xb5: ("CKR_SESSION_READ_ONLY", "the session is read-only"),
        0xb6: ("CKR_SESSION_EXISTS", "sessions are open, so the token cannot be initialized"),
        0xb7: ("CKR_SESSION_READ_ONLY_EXISTS", "a read-only session exists, so the SO cannot log in"),
        0xb8: ("CKR_SESSION_READ_WRITE_SO_EXISTS", "an SO session exists"),
        0xc0: ("CKR_SIGNATURE_INVALID", "the signature is invalid"),
        0xc1: ("CKR_SIGNATURE_LEN_RANGE", "the signature has the wrong length"),
        0xd0: ("CKR_TEMPLATE_INCOMPLETE", "the token needs more attributes to create the object"),
        0xd1: ("CKR_TEMPLATE_INCONSISTENT", "the token refused the combination of attributes"),
        0xe0: ("CKR_TOKEN_NOT_PRESENT", "no token is in the slot; insert it and retry"),
        0xe1: ("CKR_TOKEN_NOT_RECOGNIZED", "the module does not recognize the token"),
        0xe2: ("CKR_TOKEN_WRITE_PROTECTED", "the token is write-protected"),
        0x100: ("CKR_USER_ALREADY_LOGGED_IN", "the user is already logged in"),
        0x101: ("CKR_USER_NOT_LOGGED_IN", "the token needs a PIN login for this"),
        0x102: ("CKR_USER_PIN_NOT_INITIALIZED", "the token has no user PIN yet; initialize it first"),
        0x103: ("CKR_USER_TYPE_INVALID", "the token refused the login type"),
        0x104: ("CKR_USER_ANOTHER_ALREADY_LOGGED_IN", "another user is logged in to the token"),
        0x105: ("CKR_USER_TOO_MANY_TYPES", "too many users are logged in to the token"),
        0x120: ("CKR_RANDOM_SEED_NOT_SUPPORTED", "the token does not take random seeds"),
        0x121: ("CKR_RANDOM_NO_RNG", "the token has no random number generator"),
        0x130: ("CKR_DOMAIN_PARAMS_INVALID", "the token refused the curve parameters"),
        0x140: ("CKR_CURVE_NOT_SUPPORTED", "the token does not support P-256"),
        0x150: ("CKR_BUFFER_TOO_SMALL", "the output buffer was too small"),
        0x170: ("CKR_INFORMATION_SENSITIVE", "the token will not reveal that information"),
        0x190: ("CKR_CRYPTOKI_NOT_INITIALIZED", "the module was not initialized"),
        0x191: ("CKR_CRYPTOKI_ALREADY_INITIALIZED", "the module was already initialized in this process"),
        0x1a0: ("CKR_MUTEX_BAD", "the module's locking failed"),
        0x1a1: ("CKR_MUTEX_NOT_LOCKED", "the module's locking failed"),
        0x1c2: ("CKR_LIBRARY_LOAD_FAILED", "the module could not load a library it needs"),
        0x1c3: ("CKR_PIN_TOO_WEAK", "the token refuses that PIN as too weak"),
        0x1c4: ("CKR_PUBLIC_KEY_INVALID", "the token refused the public key"),
        0x200: ("CKR_FUNCTION_REJECTED", "the token or its user rejected the operation"),
    ]
}
