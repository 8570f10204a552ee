internal import CLibCrypto
import Foundation

/// SHA-256 through OpenSSL's EVP interface.
public enum SHA256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// Hashes bytes in one call.
    public static func hash(_ data: some ContiguousBytes) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(data)
        return hasher.finalize()
    }

    /// Hashes the concatenation of several parts without copying them together first.
    public static func hash(parts: [[UInt8]]) -> [UInt8] {
        var hasher = Hasher()
        for part in parts { hasher.update(part) }
        return hasher.finalize()
    }

    /// An incremental SHA-256.
    public struct Hasher {
        private let context: EVPDigestContext

        /// Starts a new hash. With the digest fetched once (`FetchedDigest`), not `EVP_sha256()`: OpenSSL
        /// 3.0 fetches a legacy EVP_MD's implementation again, under a process-wide lock, on every init,
        /// which made small hashes (Merkle nodes, chain links) cost several times the hashing itself.
        public init() { context = EVPDigestContext(algorithm: FetchedDigest.sha256.pointer) }

        /// Absorbs more bytes.
        public mutating func update(_ data: some ContiguousBytes) { context.update(data) }

        /// Returns the digest; the hasher must not be used afterwards.
        public func finalize() -> [UInt8] { context.finalize(length: SHA256.byteCount) }
    }
}

/// One EVP_MD_CTX, freed with its owner. A C pointer never leaves this module.
final class EVPDigestContext {
    let pointer: OpaquePointer

    init(algorithm: OpaquePointer?) {
        // Allocation and init only fail when memory is exhausted or OpenSSL is broken; neither is recoverable.
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed") }
        precondition(EVP_DigestInit_ex(context, algorithm, nil) == 1, "EVP_DigestInit_ex failed")
        pointer = context
    }

    deinit { EVP_MD_CTX_free(pointer) }

    func update(_ data: some ContiguousBytes) {
        data.withUnsafeBytes { buffer in
            precondition(EVP_DigestUpdate(pointer, buffer.baseAddress, buffer.count) == 1, "EVP_DigestUpdate failed")
        }
    }

    func finalize(length: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        var written: UInt32 = 0
        precondition(EVP_DigestFinal_ex(pointer, &output, &written) == 1, "EVP_DigestFinal_ex failed")
        precondition(Int(written) == length, "digest length mismatch")
        return output
    }
}
