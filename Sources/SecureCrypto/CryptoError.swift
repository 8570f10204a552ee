internal import CLibCrypto

/// An error from a cryptographic operation. Equality is by code; the message carries OpenSSL's error
/// queue where OpenSSL was the cause, so a person can look the failure up.
public typealias CryptoError = CodedFailure<CryptoErrorCode>

/// Stable codes for `CryptoError`: the kinds of failure callers tell apart.
public enum CryptoErrorCode: FailureCode, CaseNameCode {
    case openSSL
    case invalidKey
    case invalidSignature
    case invalidLength
    case invalidEncoding
    case authenticationFailed
    case randomFailed
    case invalidCiphertext

    /// The stable text: derived from the case name, except `openSSL`, published as "openssl" before the
    /// texts were derived.
    public var rawValue: String { self == .openSSL ? "openssl" : derivedCode }

    /// Cryptographic failures exit 1.
    public var kind: FailureKind { .failure }
}

extension CryptoError {
    /// Drains OpenSSL's thread-local error queue into an error, so the queue never leaks into a later call.
    static func openSSL(_ what: String, code: Code = .openSSL) -> CryptoError {
        var reasons: [String] = []
        while true {
            let packed = ERR_get_error()
            if packed == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(packed, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        let suffix = reasons.isEmpty ? "" : " (OpenSSL: " + reasons.joined(separator: "; ") + ")"
        return CryptoError(code, what + suffix)
    }

    /// Empties OpenSSL's error queue when a failure was expected and handled.
    static func clearOpenSSLQueue() { ERR_clear_error() }
}
