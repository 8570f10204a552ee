/// AES-256-GCM with a 32-byte key, a 12-byte nonce and a 16-byte tag appended to the ciphertext.
public enum AES256GCM {
    /// Key length in bytes.
    public static let keyByteCount = 32
    /// Nonce length in bytes.
    public static let nonceByteCount = 12
    /// Tag length in bytes.
    public static let tagByteCount = 16

    /// Encrypts and authenticates; returns ciphertext ‖ tag.
    public static func seal(
        _ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], associatedData: [UInt8]
    ) throws -> [UInt8] {
        try key.withUnsafeBytes { try seal(plaintext, keyBytes: $0, nonce: nonce, associatedData: associatedData) }
    }

    /// Encrypts and authenticates with a key held in an array.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]
    ) throws -> [UInt8] {
        try key.withUnsafeBytes { try seal(plaintext, keyBytes: $0, nonce: nonce, associatedData: associatedData) }
    }

    /// Checks the tag and decrypts; throws `.authenticationFailed` when the tag does not match.
    public static func open(
        _ ciphertextAndTag: [UInt8], key: SecretBytes, nonce: [UInt8], associatedData: [UInt8]
    ) throws -> [UInt8] {
        try key.withUnsafeBytes {
            try open(ciphertextAndTag, keyBytes: $0, nonce: nonce, associatedData: associatedData)
        }
    }

    /// Checks the tag and decrypts with a key held in an array.
    public static func open(
        _ ciphertextAndTag: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]
    ) throws -> [UInt8] {
        try key.withUnsafeBytes {
            try open(ciphertextAndTag, keyBytes: $0, nonce: nonce, associatedData: associatedData)
        }
    }

    private static func checkSizes(key: UnsafeRawBufferPointer, nonce: [UInt8]) throws {
        guard key.count == keyByteCount else {
            throw CryptoError(.invalidKey, "an AES-256-GCM key is 32 bytes, got \(key.count)")
        }
        guard nonce.count == nonceByteCount else {
            throw CryptoError(.invalidLength, "an AES-256-GCM nonce is 12 bytes, got \(nonce.count)")
        }
    }

    static func seal(
        _ plaintext: [UInt8], keyBytes: UnsafeRawBufferPointer, nonce: [UInt8], associatedData: [UInt8]
    ) throws -> [UInt8] {
        try checkSizes(key: keyBytes, nonce: nonce)
        let context = try GCMContext(key: keyBytes, nonce: nonce, encrypt: true)
        try context.authenticate(associatedData)
        let ciphertext = try plaintext.withUnsafeBufferPointer { try context.update($0) }
        return ciphertext + (try context.finishEncryption())
    }

    /// The tag check is ours, not OpenSSL's: decrypt (counter mode), then recompute the tag by sealing the
    /// plaintext again and compare in constant time. This costs a second pass, but puts the one
    /// secret-dependent decision in a comparison the constant-time check can watch and declassify
    /// (OpenSSL branches on its own comparison inside the provider, which valgrind cannot tell apart
    /// from a leak).
    static func open(
        _ ciphertextAndTag: [UInt8], keyBytes: UnsafeRawBufferPointer, nonce: [UInt8], associatedData: [UInt8]
    ) throws -> [UInt8] {
        try checkSizes(key: keyBytes, nonce: nonce)
        guard ciphertextAndTag.count >= tagByteCount else {
            throw CryptoError(
                .authenticationFailed,
                "an AES-256-GCM message is at least its 16-byte tag, got \(ciphertextAndTag.count) bytes")
        }
        let ciphertextCount = ciphertextAndTag.count - tagByteCount
        var plaintext = try ciphertextAndTag.withUnsafeBufferPointer { whole -> [UInt8] in
            let decryptor = try GCMContext(key: keyBytes, nonce: nonce, encrypt: false)
            try decryptor.authenticate(associatedData)
            return try decryptor.update(UnsafeBufferPointer(rebasing: whole[0..<ciphertextCount]))
        }
        let encryptor = try GCMContext(key: keyBytes, nonce: nonce, encrypt: true)
        try encryptor.authenticate(associatedData)
        _ = try plaintext.withUnsafeBufferPointer { try encryptor.update($0) }
        let expectedTag = try encryptor.finishEncryption()
        guard ConstantTime.equal(expectedTag, ciphertextAndTag[ciphertextCount...]) else {
            plaintext.withUnsafeMutableBytes { if let base = $0.baseAddress { secureZero(base, $0.count) } }
            throw CryptoError(.authenticationFailed, "AES-256-GCM authentication failed: wrong key, nonce, data or tag")
        }
        return plaintext
    }
}
