internal import CP11Kit
internal import CPKCS11Baseline
@_spi(Benchmark) import SecureToken

// The C baselines of the signing and ledger benchmarks: loops in C (CPKCS11Baseline) that make the
// token's calls and nothing else, run on a SecureToken session through its `@_spi(Benchmark)` raw
// accessor. This file is the only one that sees the C loops; the raw handles never leave the closures.

/// The C baseline sign loop (C_SignInit → C_Login(context) → C_Sign): the token's own signing limit.
enum RawSignLoop {
    /// Runs the loop `count` times on `session` with `key` and returns the nanoseconds it took.
    static func run(session: TokenSession, key: TokenKey, digest: [UInt8], count: Int) throws -> UInt64 {
        var input = digest
        var nanoseconds: UInt64 = 0
        try session.withRawSigningSession(key: key, function: "baseline sign loop") { raw in
            secure_baseline_sign_loop(
                UnsafeMutablePointer<CK_FUNCTION_LIST>(raw.functionList), raw.session, raw.key,
                raw.pin, UInt(raw.pinByteCount), raw.needsContextLogin ? 1 : 0,
                &input, UInt(input.count), count, &nanoseconds)
        }
        return nanoseconds
    }
}

/// The C baseline of one ledger append's token operations: the checkpoint signature with its
/// per-signature login, then the anchor's replacement (find the old private CKO_DATA object of
/// `application` and `label`, create the new one holding `value`, destroy the old), the same calls in
/// the same order as `TokenSession.sign` and `replaceDataObject` make. Use a label no wallet uses.
enum RawAppendLoop {
    /// Runs the loop `count` times and returns its nanoseconds and the PKCS#11 calls it made.
    static func run(
        session: TokenSession, key: TokenKey, digest: [UInt8], application: String, label: String,
        value: [UInt8], count: Int
    ) throws -> (nanoseconds: UInt64, calls: UInt64) {
        var input = digest, applicationBytes = Array(application.utf8), labelBytes = Array(label.utf8), data = value
        var nanoseconds: UInt64 = 0, calls: UInt64 = 0
        try session.withRawSigningSession(key: key, function: "baseline append loop") { raw in
            secure_baseline_append_loop(
                UnsafeMutablePointer<CK_FUNCTION_LIST>(raw.functionList), raw.session,
                raw.key, raw.pin, UInt(raw.pinByteCount), raw.needsContextLogin ? 1 : 0,
                &input, UInt(input.count), &applicationBytes, UInt(applicationBytes.count),
                &labelBytes, UInt(labelBytes.count), &data, UInt(data.count), count,
                &nanoseconds, &calls)
        }
        return (nanoseconds, calls)
    }
}

extension TokenSession {
    /// `RawSignLoop` on this session: the signing benchmark's baseline.
    func rawSignLoop(key: TokenKey, digest: [UInt8], count: Int) throws -> UInt64 {
        try RawSignLoop.run(session: self, key: key, digest: digest, count: count)
    }

    /// `RawAppendLoop` on this session: the ledger benchmark's baseline for an append's token operations.
    func rawAppendLoop(
        key: TokenKey, digest: [UInt8], application: String, label: String, value: [UInt8],
        count: Int
    ) throws -> (nanoseconds: UInt64, calls: UInt64) {
        try RawAppendLoop.run(
            session: self, key: key, digest: digest, application: application, label: label,
            value: value, count: count)
    }
}
