/// SHA3-256 (FIPS 202) through OpenSSL.
public enum SHA3_256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// Hashes bytes in one call.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        KeccakContext().compute(.sha3With256Bits, parts: [data], outputByteCount: byteCount, isXOF: false)
    }
}

/// SHA3-512 (FIPS 202) through OpenSSL.
public enum SHA3_512 {
    /// The digest length in bytes.
    public static let byteCount = 64

    /// Hashes bytes in one call.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        KeccakContext().compute(.sha3With512Bits, parts: [data], outputByteCount: byteCount, isXOF: false)
    }
}

/// SHAKE128 (FIPS 202) through OpenSSL. OpenSSL 3.0 squeezes once, so ask for all the output at once;
/// the output is prefix-consistent, so asking again for more returns the same first bytes.
public enum SHAKE128 {
    /// `outputByteCount` bytes of SHAKE128 output.
    public static func hash(_ data: [UInt8], outputByteCount: Int) -> [UInt8] {
        precondition(outputByteCount >= 0, "a negative output length")
        return KeccakContext().compute(.shake128, parts: [data], outputByteCount: outputByteCount, isXOF: true)
    }
}

/// SHAKE256 (FIPS 202) through OpenSSL; see `SHAKE128` about squeezing.
public enum SHAKE256 {
    /// `outputByteCount` bytes of SHAKE256 output.
    public static func hash(_ data: [UInt8], outputByteCount: Int) -> [UInt8] {
        precondition(outputByteCount >= 0, "a negative output length")
        return KeccakContext().compute(.shake256, parts: [data], outputByteCount: outputByteCount, isXOF: true)
    }
}

extension SHAKE128 {
    /// An incremental SHAKE128: absorb any number of parts, then squeeze once.
    public struct Hasher {
        private let context = KeccakContext()

        /// Starts absorbing.
        public init() { context.start(.shake128) }

        /// Absorbs more bytes.
        public mutating func update(_ data: [UInt8]) { context.absorb(data) }

        /// Absorbs secret bytes.
        public mutating func update(_ data: SecretBytes) {
            data.withUnsafeBytes { context.absorb($0.baseAddress, $0.count) }
        }

        /// Squeezes `outputByteCount` bytes; the hasher must not be used afterwards (OpenSSL 3.0 squeezes once).
        public func finalize(outputByteCount: Int) -> [UInt8] {
            var output = [UInt8](repeating: 0, count: outputByteCount)
            output.withUnsafeMutableBytes {
                if let base = $0.baseAddress { context.squeeze(into: base, count: outputByteCount) }
            }
            return output
        }
    }
}
