import Foundation

/// Parsed P-256 public keys by their point, so a key seen before is not parsed and checked again.
/// OpenSSL 3 parses a key through its generic decoder framework, which costs far more than the signature
/// check that follows: the deterministic simulator spent 60 % of its time there (docs/SIMULATION.md), and
/// every ledger entry, key event and peer message carries a key. Only keys that parsed and passed the point
/// check are kept, so the cache never makes an invalid point valid. EVP_PKEY is reference-counted and safe
/// to share for verification across threads.
final class P256KeyCache: @unchecked Sendable {
    static let shared = P256KeyCache()
    /// A wallet meets a handful of keys; past this many the cache starts again rather than grow.
    static let keyCountMax = 4_096
    private let mutex = NSLock()
    private var keys: [[UInt8]: EVPPublicKey] = [:]

    /// The parsed key for an uncompressed point, parsing (and checking) it the first time.
    func key(x963 point: [UInt8]) throws -> EVPPublicKey {
        if let known = mutex.withLock({ keys[point] }) { return known }
        let parsed = try EVPPublicKey(spki: P256.spkiPrefix + point)
        mutex.withLock {
            if keys.count >= Self.keyCountMax { keys.removeAll(keepingCapacity: true) }
            keys[point] = parsed
        }
        return parsed
    }
}

/// Signatures that verified, by (key, digest, signature). A key-event log is verified in whole each time a
/// wallet reads it (every peer session reads the peer's, every open reads its own), so the same few hundred
/// signatures were checked again and again: after the key cache, the simulator spent half its time there.
/// Verification is a pure function of these bytes, so remembering a success is exact; failures are not
/// kept. Everything here is public data.
final class P256VerifiedSignatures: @unchecked Sendable {
    static let shared = P256VerifiedSignatures()
    /// About 170 bytes each; past this many the set starts again rather than grow.
    static let signatureCountMax = 16_384
    private let mutex = NSLock()
    private var verified: Set<[UInt8]> = []

    /// Whether the signature verifies, asking `verify` only for one not seen to verify before.
    func isValid(key x963: [UInt8], digest: [UInt8], der: [UInt8], verify: () -> Bool) -> Bool {
        let entry = x963 + digest + der
        if mutex.withLock({ verified.contains(entry) }) { return true }
        guard verify() else { return false }
        mutex.withLock {
            if verified.count >= Self.signatureCountMax { verified.removeAll(keepingCapacity: true) }
            verified.insert(entry)
        }
        return true
    }
}
