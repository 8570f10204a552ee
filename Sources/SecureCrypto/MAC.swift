/// HMAC-SHA256 (RFC 2104) through OpenSSL.
public enum HMACSHA256 {
    /// The tag length in bytes.
    public static let byteCount = 32

    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { LibCryptoMAC.hmacSHA256(key: keyBytes, message: $0) }
        }
    }

    /// The same, keyed by a secret.
    public static func authenticationCode(key: SecretBytes, message: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { LibCryptoMAC.hmacSHA256(key: keyBytes, message: $0) }
        }
    }
}

/// HKDF-SHA256 (RFC 5869), extract then expand, through OpenSSL.
public enum HKDFSHA256 {
    /// The largest output RFC 5869 allows: 255 blocks of 32 bytes.
    public static let outputByteCountMax = 255 * 32

    /// Derives `outputByteCount` bytes. Throws `.invalidLength` outside 1...8160 bytes.
    public static func deriveKey(
        inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8],
        outputByteCount: Int
    ) throws -> [UInt8] {
        try checkLength(outputByteCount)
        return try inputKeyMaterial.withUnsafeBytes {
            try LibCryptoMAC.hkdfSHA256(key: $0, salt: salt, info: info, outputByteCount: outputByteCount)
        }
    }

    /// Derives from secret input keying material (a KEM or ECDH shared secret).
    public static func deriveKey(
        inputKeyMaterial: SecretBytes, salt: [UInt8], info: [UInt8],
        outputByteCount: Int
    ) throws -> [UInt8] {
        try checkLength(outputByteCount)
        return try inputKeyMaterial.withUnsafeBytes {
            try LibCryptoMAC.hkdfSHA256(key: $0, salt: salt, info: info, outputByteCount: outputByteCount)
        }
    }

    private static func checkLength(_ count: Int) throws {
        guard (1...outputByteCountMax).contains(count) else {
            throw CryptoError(
                .invalidLength, "HKDF-SHA256 output must be 1 to \(outputByteCountMax) bytes, asked for \(count)")
        }
    }
}
