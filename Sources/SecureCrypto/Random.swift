internal import CLibCrypto

/// The system CSPRNG, through OpenSSL's RAND_bytes (seeded from getrandom).
public enum SystemRandom {
    /// Returns `count` fresh random bytes. A CSPRNG failure is not something a caller can recover from
    /// safely (continuing would risk reused nonces), so it traps.
    public static func bytes(_ count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        if count > 0 {
            precondition(RAND_bytes(&output, Int32(count)) == 1, "RAND_bytes failed: the system CSPRNG is unavailable")
        }
        return output
    }
}
