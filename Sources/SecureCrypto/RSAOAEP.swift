import Foundation

/// An RSA public key, for wrapping the database key to a token that has no ECDH but decrypts RSA-OAEP
/// (a TPM through tpm2-pkcs11). Only public-key operations: RSA private keys stay on tokens.
public struct RSAPublicKey: Sendable, Equatable {
    /// The modulus, big-endian, without leading zero bytes.
    public let modulus: [UInt8]
    /// The public exponent, big-endian, without leading zero bytes.
    public let publicExponent: [UInt8]

    /// Moduli from 2048 bits (NIST SP 800-131A's floor) to 4096 bits (a bound on what a file may ask).
    public static let modulusBitCountRange = 2048...4096
    /// Exponents of at most 4 bytes: 65537 in practice; larger ones are not used by tokens.
    static let exponentByteCountMax = 4

    /// Checks the numbers and that OpenSSL accepts them as a public key.
    public init(modulus: [UInt8], publicExponent: [UInt8]) throws {
        let modulus = Array(modulus.drop { $0 == 0 }), exponent = Array(publicExponent.drop { $0 == 0 })
        let bitCount = modulus.isEmpty ? 0 : (modulus.count - 1) * 8 + (8 - modulus[0].leadingZeroBitCount)
        guard Self.modulusBitCountRange.contains(bitCount), modulus.last! & 1 == 1 else {
            throw CryptoError.openSSL(
                "an RSA modulus of \(bitCount) bits is outside 2048...4096 or even", code: .invalidKey)
        }
        guard !exponent.isEmpty, exponent.count <= Self.exponentByteCountMax, exponent.last! & 1 == 1,
            exponent != [1]
        else {
            throw CryptoError.openSSL(
                "the RSA public exponent is not an odd number of at most 4 bytes above 1", code: .invalidKey)
        }
        self.modulus = modulus
        self.publicExponent = exponent
        _ = try EVPPublicKey(spki: spki)
    }

    /// The DER SubjectPublicKeyInfo (RFC 8017 appendix A.1.1 inside RFC 5280's SPKI).
    public var spki: [UInt8] {
        let rsaPublicKey = Self.der(0x30, Self.derInteger(modulus) + Self.derInteger(publicExponent))
        let algorithm = Self.der(0x30, [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00])
        return Self.der(0x30, algorithm + Self.der(0x03, [0x00] + rsaPublicKey))
    }

    /// The modulus size in bytes: the size of every OAEP ciphertext to this key.
    public var ciphertextByteCount: Int { modulus.count }

    /// RSAES-OAEP with SHA-256 (hash and MGF1) and an empty label. The result is exactly
    /// `ciphertextByteCount` bytes.
    public func encryptOAEPSHA256(_ plaintext: SecretBytes) throws -> [UInt8] {
        let key = try EVPPublicKey(spki: spki)
        return try plaintext.withUnsafeBytes { try key.encryptRSAOAEPSHA256($0) }
    }

    private static func derInteger(_ value: [UInt8]) -> [UInt8] {
        der(0x02, value.first.map { $0 & 0x80 != 0 } == true ? [0] + value : value)
    }

    /// A DER element with a definite length of up to two bytes (enough for 4096-bit keys).
    private static func der(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        precondition(contents.count <= 0xffff)
        if contents.count < 0x80 { return [tag, UInt8(contents.count)] + contents }
        if contents.count <= 0xff { return [tag, 0x81, UInt8(contents.count)] + contents }
        return [tag, 0x82, UInt8(contents.count >> 8), UInt8(contents.count & 0xff)] + contents
    }
}
