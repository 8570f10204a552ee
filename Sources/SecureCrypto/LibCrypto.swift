internal import CLibCrypto

// Every OpenSSL call made by the primitives added after the package skeleton lives in this file: the
// fetched algorithms, the digest/XOF context that ML-KEM reuses, AES-GCM, HMAC, HKDF, X25519 and P-256
// key agreement. Each C handle is owned by a final class whose deinit frees it; no pointer leaves the module.

/// An algorithm fetched once from the default provider and kept for the life of the process. Fetching
/// explicitly avoids OpenSSL 3.0's implicit fetch (a locked lookup) on every init.
final class FetchedDigest: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ name: String) { pointer = fetchAlgorithm(name) { EVP_MD_fetch(nil, $0, nil) } }

    // Process-lifetime objects: never freed.
    static let sha3With256Bits = FetchedDigest("SHA3-256")
    static let sha3With512Bits = FetchedDigest("SHA3-512")
    static let shake128 = FetchedDigest("SHAKE128")
    static let shake256 = FetchedDigest("SHAKE256")
    static let sha256 = FetchedDigest("SHA2-256")
}

/// A cipher fetched once, like `FetchedDigest`.
final class FetchedCipher: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ name: String) { pointer = fetchAlgorithm(name) { EVP_CIPHER_fetch(nil, $0, nil) } }

    static let aes256GCM = FetchedCipher("AES-256-GCM")
}

/// An algorithm fetched from the default provider; a missing one is a broken installation, not a user error.
private func fetchAlgorithm(_ name: String, _ fetch: (String) -> OpaquePointer?) -> OpaquePointer {
    guard let pointer = fetch(name) else {
        preconditionFailure("OpenSSL has no \(name); the default provider is not loaded")
    }
    return pointer
}

/// One EVP_MD_CTX reused for a sequence of SHA-3/SHAKE computations (ML-KEM makes a dozen per operation).
/// Not thread-safe: each operation makes its own.
final class KeccakContext {
    private let context: OpaquePointer

    init() {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed") }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Starts a new computation with `digest`, absorbing nothing yet.
    @inline(__always)
    func start(_ digest: FetchedDigest) {
        // Init fails only on allocation failure or a broken provider; neither is recoverable.
        precondition(EVP_DigestInit_ex2(context, digest.pointer, nil) == 1, "EVP_DigestInit_ex2 failed")
    }

    @inline(__always)
    func absorb(_ pointer: UnsafeRawPointer?, _ count: Int) {
        guard count > 0 else { return }
        precondition(EVP_DigestUpdate(context, pointer, count) == 1, "EVP_DigestUpdate failed")
    }

    func absorb(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { absorb($0.baseAddress, $0.count) }
    }

    /// Finishes a fixed-length digest (SHA3-256 or SHA3-512) into `output`.
    @inline(__always)
    func finish(into output: UnsafeMutableRawPointer, count: Int) {
        var written: UInt32 = 0
        precondition(
            EVP_DigestFinal_ex(context, output.assumingMemoryBound(to: UInt8.self), &written) == 1,
            "EVP_DigestFinal_ex failed")
        precondition(Int(written) == count, "digest length mismatch")
    }

    /// Squeezes `count` bytes from an XOF. OpenSSL 3.0 allows one squeeze per absorb, so callers ask for
    /// everything they need at once.
    @inline(__always)
    func squeeze(into output: UnsafeMutableRawPointer, count: Int) {
        precondition(
            EVP_DigestFinalXOF(context, output.assumingMemoryBound(to: UInt8.self), count) == 1,
            "EVP_DigestFinalXOF failed")
    }

    /// One-shot helper: digest or XOF of the concatenation of `parts`.
    func compute(_ digest: FetchedDigest, parts: [[UInt8]], outputByteCount: Int, isXOF: Bool) -> [UInt8] {
        start(digest)
        for part in parts { absorb(part) }
        var output = [UInt8](repeating: 0, count: outputByteCount)
        output.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            if isXOF { squeeze(into: base, count: outputByteCount) } else { finish(into: base, count: outputByteCount) }
        }
        return output
    }
}

/// Overwrites memory in a way the compiler may not remove.
func secureZero(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
    if count > 0 { OPENSSL_cleanse(pointer, count) }
}

// MARK: - AES-256-GCM

/// One EVP_CIPHER_CTX for AES-256-GCM, in one direction.
final class GCMContext {
    private let context: OpaquePointer

    init(key: UnsafeRawBufferPointer, nonce: [UInt8], encrypt: Bool) throws {
        guard let context = EVP_CIPHER_CTX_new() else { preconditionFailure("EVP_CIPHER_CTX_new failed") }
        self.context = context
        // The default GCM IV length is 12 bytes, which is the only length this type accepts.
        let ok = nonce.withUnsafeBufferPointer { iv in
            EVP_CipherInit_ex2(
                context, FetchedCipher.aes256GCM.pointer,
                key.baseAddress?.assumingMemoryBound(to: UInt8.self), iv.baseAddress,
                encrypt ? 1 : 0, nil)
        }
        guard ok == 1 else { throw CryptoError.openSSL("AES-256-GCM initialisation failed") }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    func authenticate(_ associatedData: [UInt8]) throws {
        guard !associatedData.isEmpty else { return }
        var written: Int32 = 0
        let ok = associatedData.withUnsafeBufferPointer {
            EVP_CipherUpdate(context, nil, &written, $0.baseAddress, Int32($0.count))
        }
        guard ok == 1 else { throw CryptoError.openSSL("AES-256-GCM associated data failed") }
    }

    /// Runs the counter-mode part over `input` and returns the output of the same length.
    func update(_ input: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        guard input.count > 0 else { return [] }
        // EVP lengths are int; callers bound messages far below this.
        guard input.count < Int(Int32.max) - 16 else { throw CryptoError(.invalidLength, "AES-GCM input too long") }
        var output = [UInt8](repeating: 0, count: input.count)
        var written: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer {
            EVP_CipherUpdate(context, $0.baseAddress, &written, input.baseAddress, Int32(input.count))
        }
        guard ok == 1, Int(written) == input.count else { throw CryptoError.openSSL("AES-256-GCM update failed") }
        return output
    }

    /// Finishes an encryption and returns the 16-byte tag.
    func finishEncryption() throws -> [UInt8] {
        var scratch = [UInt8](repeating: 0, count: 16)
        var written: Int32 = 0
        guard EVP_CipherFinal_ex(context, &scratch, &written) == 1, written == 0 else {
            throw CryptoError.openSSL("AES-256-GCM final failed")
        }
        var tag = [UInt8](repeating: 0, count: 16)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, &tag) == 1 else {
            throw CryptoError.openSSL("AES-256-GCM could not return its tag")
        }
        return tag
    }
}

// MARK: - HMAC and HKDF

enum LibCryptoMAC {
    static func hmacSHA256(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var written: UInt32 = 0
        // HMAC() wants non-null pointers even for empty inputs.
        var empty: UInt8 = 0
        let result = withUnsafePointer(to: &empty) { emptyPointer in
            HMAC(
                EVP_sha256(), key.baseAddress ?? UnsafeRawPointer(emptyPointer), Int32(key.count),
                message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyPointer, message.count,
                &output, &written)
        }
        precondition(result != nil && written == 32, "HMAC-SHA256 failed")
        return output
    }

    static func hkdfSHA256(
        key: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], outputByteCount: Int
    ) throws -> [UInt8] {
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw CryptoError.openSSL("OpenSSL has no HKDF") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw CryptoError.openSSL("EVP_KDF_CTX_new failed") }
        defer { EVP_KDF_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: outputByteCount)
        var emptyInput: UInt8 = 0
        let ok: Int32 = "key".withCString { keyName in
            "salt".withCString { saltName in
                "info".withCString { infoName in
                    "digest".withCString { digestName in
                        "SHA256".withCString { digestValue in
                            salt.withUnsafeBytes { saltBytes in
                                info.withUnsafeBytes { infoBytes in
                                    withUnsafeMutablePointer(to: &emptyInput) { empty in
                                        let emptyRaw = UnsafeMutableRawPointer(empty)
                                        var params: [OSSL_PARAM] = [
                                            OSSL_PARAM_construct_utf8_string(
                                                digestName, UnsafeMutablePointer(mutating: digestValue), 0),
                                            OSSL_PARAM_construct_octet_string(
                                                keyName, UnsafeMutableRawPointer(mutating: key.baseAddress) ?? emptyRaw,
                                                key.count),
                                            OSSL_PARAM_construct_octet_string(
                                                saltName,
                                                UnsafeMutableRawPointer(mutating: saltBytes.baseAddress) ?? emptyRaw,
                                                saltBytes.count),
                                            OSSL_PARAM_construct_octet_string(
                                                infoName,
                                                UnsafeMutableRawPointer(mutating: infoBytes.baseAddress) ?? emptyRaw,
                                                infoBytes.count),
                                            OSSL_PARAM_construct_end(),
                                        ]
                                        return output.withUnsafeMutableBufferPointer {
                                            EVP_KDF_derive(context, $0.baseAddress, $0.count, &params)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard ok == 1 else { throw CryptoError.openSSL("HKDF-SHA256 derivation failed") }
        return output
    }
}

// MARK: - Private keys for key agreement (X25519, P-256)

/// An EVP_PKEY holding a private key, freed and wiped by OpenSSL with its owner.
final class EVPPrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    private init(pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// An X25519 key from its 32 raw bytes (clamping happens inside the scalar multiplication).
    static func x25519(raw: UnsafeRawBufferPointer) throws -> EVPPrivateKey {
        guard raw.count == 32,
            let key = EVP_PKEY_new_raw_private_key(
                EVP_PKEY_X25519, nil,
                raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 32)
        else {
            throw CryptoError.openSSL("not a valid X25519 private key", code: .invalidKey)
        }
        return EVPPrivateKey(pointer: key)
    }

    /// A fresh P-256 key from the system CSPRNG.
    static func generateP256() throws -> EVPPrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name(EC) failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let generated = key
        else {
            throw CryptoError.openSSL("P-256 key generation failed")
        }
        return EVPPrivateKey(pointer: generated)
    }

    /// The X25519 public key's 32 raw bytes.
    func rawPublicKey() throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(pointer, &output, &length) == 1, length == 32 else {
            throw CryptoError.openSSL("could not read the X25519 public key")
        }
        return output
    }

    /// The public key as a DER SubjectPublicKeyInfo.
    func subjectPublicKeyInfo() throws -> [UInt8] {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else { throw CryptoError.openSSL("could not encode the public key") }
        var output = [UInt8](repeating: 0, count: Int(length))
        let written = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(pointer, &cursor)
        }
        guard written == length else { throw CryptoError.openSSL("could not encode the public key") }
        return output
    }

    /// Derives the raw shared secret with a peer public key, into a wiped-on-release buffer.
    func derive(peer: OpaquePointer, secretByteCount: Int) throws -> SecretBytes {
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer) == 1 else {
            throw CryptoError.openSSL("key agreement setup failed", code: .invalidKey)
        }
        var length = secretByteCount
        let secret = SecretBytes(zeroedCount: secretByteCount)
        let ok = secret.storage.withUnsafeMutableBytes { buffer in
            EVP_PKEY_derive(context, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        guard ok == 1, length == secretByteCount else {
            throw CryptoError.openSSL("key agreement failed", code: .invalidKey)
        }
        return secret
    }
}

/// An EVP_PKEY holding an X25519 public key.
final class EVPX25519PublicKey {
    let pointer: OpaquePointer

    init(raw: [UInt8]) throws {
        guard raw.count == 32, let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, raw, 32) else {
            throw CryptoError.openSSL("an X25519 public key is 32 bytes", code: .invalidKey)
        }
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }
}

extension EVPPublicKey {
    /// The raw OpenSSL handle, for key agreement inside this module.
    var handle: OpaquePointer { pointer }
}

extension EVPPublicKey {
    /// RSAES-OAEP (RFC 8017, section 7.1) with SHA-256 as the hash and in MGF1, and an empty label: what a
    /// token without ECDH (tpm2-pkcs11) decrypts with CKM_RSA_PKCS_OAEP.
    func encryptRSAOAEPSHA256(_ plaintext: UnsafeRawBufferPointer) throws -> [UInt8] {
        let input = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_encrypt_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_oaep_md(context, EVP_sha256()) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md(context, EVP_sha256()) == 1
        else {
            throw CryptoError.openSSL("RSA-OAEP setup failed", code: .invalidKey)
        }
        var length = 0
        guard EVP_PKEY_encrypt(context, nil, &length, input, plaintext.count) == 1 else {
            throw CryptoError.openSSL("RSA-OAEP encryption failed", code: .invalidKey)
        }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_encrypt(context, &output, &length, input, plaintext.count) == 1 else {
            throw CryptoError.openSSL("RSA-OAEP encryption failed", code: .invalidKey)
        }
        return Array(output.prefix(length))
    }

    /// The modulus size in bits.
    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }
}

// MARK: - The recovery key (the one software P-256 signing key)

extension EVPPrivateKey {
    /// A P-256 key from its private scalar (1 ≤ d < n, checked by the caller), through a SEC 1 ECPrivateKey
    /// DER built in wiped memory: SEQUENCE { version 1, OCTET STRING d, [0] namedCurve prime256v1 }. OpenSSL
    /// computes the public point.
    static func p256(scalar: SecretBytes) throws -> EVPPrivateKey {
        precondition(scalar.count == P256.scalarByteCount)
        let prefix: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20]
        let suffix: [UInt8] = [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let der = SecretBytes(zeroedCount: prefix.count + 32 + suffix.count)
        der.storage.withUnsafeMutableBytes { buffer in
            buffer.copyBytes(from: prefix)
            scalar.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]).copyMemory(from: $0)
            }
            UnsafeMutableRawBufferPointer(rebasing: buffer[(prefix.count + 32)...]).copyBytes(from: suffix)
        }
        let parsed = der.withUnsafeBytes { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptoError.openSSL("not a valid P-256 private key", code: .invalidKey) }
        return EVPPrivateKey(pointer: parsed)
    }

    /// An ECDSA signature (DER) over a 32-byte digest.
    func signDigest(_ digest: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_sign_init(context) == 1 else { throw CryptoError.openSSL("EVP_PKEY_sign_init failed") }
        var length = 0
        guard EVP_PKEY_sign(context, nil, &length, digest, digest.count) == 1 else {
            throw CryptoError.openSSL("EVP_PKEY_sign failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context, &signature, &length, digest, digest.count) == 1 else {
            throw CryptoError.openSSL("EVP_PKEY_sign failed")
        }
        return Array(signature.prefix(length))
    }
}

// MARK: - SubjectPublicKeyInfo of a key file (a clearing's TLS key pin)

enum KeyFileDER {
    /// The DER SubjectPublicKeyInfo of a DER public key (SubjectPublicKeyInfo) or private key (PKCS#8 or the
    /// traditional EC or RSA form), re-encoded by OpenSSL, so a malformed key is refused rather than hashed.
    static func subjectPublicKeyInfo(der: [UInt8], isPrivate: Bool) throws -> [UInt8] {
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let result =
                isPrivate ? d2i_AutoPrivateKey(nil, &cursor, buffer.count) : d2i_PUBKEY(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = base.distance(to: cursor) }
            return result
        }
        guard let parsed else {
            throw CryptoError.openSSL(
                "the \(isPrivate ? "private" : "public") key is not one OpenSSL reads", code: .invalidEncoding)
        }
        defer { EVP_PKEY_free(parsed) }
        guard consumed == der.count else {
            throw CryptoError(.invalidEncoding, "the key has \(der.count - consumed) bytes after its end")
        }
        let length = i2d_PUBKEY(parsed, nil)
        guard length > 0 else { throw CryptoError.openSSL("could not encode the public key") }
        var output = [UInt8](repeating: 0, count: Int(length))
        let written = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(parsed, &cursor)
        }
        guard written == length else { throw CryptoError.openSSL("could not encode the public key") }
        return output
    }
}
