// ByteEncode/ByteDecode, Compress/Decompress (FIPS 203 §4.2.1) and the sampling algorithms (§4.2.2).

enum MLKEMCoding {
    /// Compress_d(x) = round(2^d · x / q) mod 2^d for x in [0, q), as ⌊(x·2^d + (q−1)/2) / q⌋ computed with
    /// a multiply and a shift (see `MLKEMField.compressMultiplier`): no division on a secret (KyberSlash).
    @inline(__always)
    static func compress(_ x: Int16, bits d: Int) -> UInt32 {
        let numerator = (UInt64(UInt16(bitPattern: x)) << UInt64(d)) &+ 1664
        let quotient = (numerator &* MLKEMField.compressMultiplier) >> 40
        return UInt32(truncatingIfNeeded: quotient) & ((1 << UInt32(d)) &- 1)
    }

    /// Decompress_d(y) = round(q · y / 2^d), by a shift.
    @inline(__always)
    static func decompress(_ y: UInt32, bits d: Int) -> Int16 {
        Int16(truncatingIfNeeded: (y &* 3329 &+ (1 << UInt32(d &- 1))) >> UInt32(d))
    }

    /// Calls `body` with d as a literal, one call for each d ∈ {4, 5, 10, 11}, so that the compiler
    /// specialises the inlined packing in `body` for each d.
    @inline(__always)
    private static func withLiteralBits(_ d: Int, _ body: (Int) -> Void) {
        switch d {
        case 4: body(4)
        case 5: body(5)
        case 10: body(10)
        case 11: body(11)
        default: preconditionFailure("ML-KEM compresses to 4, 5, 10 or 11 bits")
        }
    }

    /// ByteEncode_d(Compress_d(r)) for d ∈ {4, 5, 10, 11}, after reducing r to [0, q). Each group of
    /// eight coefficients fills exactly d bytes, packed by code specialised for each d. The layout never
    /// depends on the data.
    static func compressAndEncode(_ r: Coefficients, bits d: Int, into output: UnsafeMutablePointer<UInt8>) {
        withLiteralBits(d) { compressAndEncodeGroups(r, bits: $0, into: output) }
    }

    @inline(__always)
    private static func compressAndEncodeGroups(
        _ r: Coefficients, bits d: Int, into output: UnsafeMutablePointer<UInt8>
    ) {
        for group in 0..<32 {
            var low: UInt64 = 0
            var high: UInt64 = 0
            for lane in 0..<8 {
                let value = UInt64(
                    compress(MLKEMField.toCanonical(MLKEMField.barrettReduce(r[8 &* group &+ lane])), bits: d))
                let shift = lane &* d
                if shift < 64 {
                    low |= value << UInt64(shift)
                    if shift &+ d > 64 { high |= value >> UInt64(64 &- shift) }
                } else {
                    high |= value << UInt64(shift &- 64)
                }
            }
            let destination = output + d &* group
            for byte in 0..<d {
                destination[byte] =
                    byte < 8
                    ? UInt8(truncatingIfNeeded: low >> UInt64(8 &* byte))
                    : UInt8(truncatingIfNeeded: high >> UInt64(8 &* (byte &- 8)))
            }
        }
    }

    /// Decompress_d(ByteDecode_d(input)) for d ∈ {4, 5, 10, 11}, eight coefficients from each d bytes.
    static func decodeAndDecompress(_ input: UnsafePointer<UInt8>, bits d: Int, into r: Coefficients) {
        withLiteralBits(d) { decodeAndDecompressGroups(input, bits: $0, into: r) }
    }

    @inline(__always)
    private static func decodeAndDecompressGroups(_ input: UnsafePointer<UInt8>, bits d: Int, into r: Coefficients) {
        let mask = (UInt64(1) << UInt64(d)) &- 1
        for group in 0..<32 {
            let source = input + d &* group
            var low: UInt64 = 0
            var high: UInt64 = 0
            for byte in 0..<d {
                if byte < 8 {
                    low |= UInt64(source[byte]) << UInt64(8 &* byte)
                } else {
                    high |= UInt64(source[byte]) << UInt64(8 &* (byte &- 8))
                }
            }
            for lane in 0..<8 {
                let shift = lane &* d
                var value: UInt64
                if shift < 64 {
                    value = low >> UInt64(shift)
                    if shift &+ d > 64 { value |= high << UInt64(64 &- shift) }
                } else {
                    value = high >> UInt64(shift &- 64)
                }
                r[8 &* group &+ lane] = decompress(UInt32(truncatingIfNeeded: value & mask), bits: d)
            }
        }
    }

    /// ByteEncode₁₂ of r after reducing it to [0, q): 384 bytes.
    static func encode12(_ r: Coefficients, into output: UnsafeMutablePointer<UInt8>) {
        for pair in 0..<128 {
            let a = UInt16(bitPattern: MLKEMField.toCanonical(MLKEMField.barrettReduce(r[2 * pair])))
            let b = UInt16(bitPattern: MLKEMField.toCanonical(MLKEMField.barrettReduce(r[2 * pair + 1])))
            output[3 * pair] = UInt8(truncatingIfNeeded: a)
            output[3 * pair + 1] = UInt8(truncatingIfNeeded: (a >> 8) | (b << 4))
            output[3 * pair + 2] = UInt8(truncatingIfNeeded: b >> 4)
        }
    }

    /// ByteDecode₁₂: 384 bytes to 256 values in [0, 4096). Returns a mask with bit 15 set for every value
    /// ≥ q OR-ed together, so a caller can run the modulus check without a data-dependent branch here.
    @discardableResult
    static func decode12(_ input: UnsafePointer<UInt8>, into r: Coefficients) -> UInt16 {
        var outOfRange: UInt16 = 0
        for pair in 0..<128 {
            let b0 = UInt16(input[3 * pair]), b1 = UInt16(input[3 * pair + 1]), b2 = UInt16(input[3 * pair + 2])
            let a = b0 | ((b1 & 0x0f) << 8)
            let b = (b1 >> 4) | (b2 << 4)
            // (q − 1 − v) goes negative, setting bit 15, exactly when v ≥ q.
            outOfRange |= (3328 &- a) | (3328 &- b)
            r[2 * pair] = Int16(bitPattern: a)
            r[2 * pair + 1] = Int16(bitPattern: b)
        }
        return outOfRange & 0x8000
    }

    /// ByteEncode₁(Compress₁(r)): the 32-byte message from a decrypted polynomial.
    static func encodeMessage(_ r: Coefficients, into output: UnsafeMutablePointer<UInt8>) {
        for byteIndex in 0..<32 {
            var byte: UInt32 = 0
            for bit in 0..<8 {
                let x = MLKEMField.toCanonical(MLKEMField.barrettReduce(r[8 * byteIndex + bit]))
                byte |= compress(x, bits: 1) << UInt32(bit)
            }
            output[byteIndex] = UInt8(truncatingIfNeeded: byte)
        }
    }

    /// Decompress₁(ByteDecode₁(m)): each message bit becomes 0 or ⌈q/2⌉ = 1665, through a mask.
    static func decodeMessage(_ message: UnsafePointer<UInt8>, into r: Coefficients) {
        for byteIndex in 0..<32 {
            let byte = Int16(message[byteIndex])
            for bit in 0..<8 {
                let mask = 0 &- ((byte >> Int16(bit)) & 1)
                r[8 * byteIndex + bit] = mask & 1665
            }
        }
    }

    /// SampleNTT (Algorithm 7) from a block of SHAKE128 output: rejection sampling of 12-bit candidates
    /// below q. Fills r from index `start` and returns how many coefficients are now filled. The input is
    /// public (derived from ρ), so branching on it leaks nothing.
    static func sampleUniform(_ bytes: UnsafePointer<UInt8>, count: Int, into r: Coefficients, start: Int) -> Int {
        var filled = start
        var cursor = 0
        while filled < 256 && cursor &+ 3 <= count {
            let b0 = UInt16(bytes[cursor]), b1 = UInt16(bytes[cursor + 1]), b2 = UInt16(bytes[cursor + 2])
            cursor &+= 3
            let d1 = b0 | ((b1 & 0x0f) << 8)
            let d2 = (b1 >> 4) | (b2 << 4)
            if d1 < 3329 { r[filled] = Int16(bitPattern: d1); filled &+= 1 }
            if d2 < 3329 && filled < 256 { r[filled] = Int16(bitPattern: d2); filled &+= 1 }
        }
        return filled
    }

    /// SamplePolyCBD_η (Algorithm 8) from 64·η bytes of PRF output, η ∈ {2, 3}: each coefficient is the
    /// difference of two η-bit popcounts, computed with masks and adds on 32-bit words.
    static func sampleCBD(_ bytes: UnsafePointer<UInt8>, eta: Int, into r: Coefficients) {
        if eta == 2 {
            for word in 0..<32 {
                let base = bytes + 4 * word
                let t = UInt32(base[0]) | (UInt32(base[1]) << 8) | (UInt32(base[2]) << 16) | (UInt32(base[3]) << 24)
                let d = (t & 0x5555_5555) &+ ((t >> 1) & 0x5555_5555)
                for j in 0..<8 {
                    let a = Int16(truncatingIfNeeded: (d >> UInt32(4 * j)) & 3)
                    let b = Int16(truncatingIfNeeded: (d >> UInt32(4 * j + 2)) & 3)
                    r[8 * word + j] = a &- b
                }
            }
        } else {
            precondition(eta == 3, "ML-KEM uses η = 2 or 3")
            for group in 0..<64 {
                let base = bytes + 3 * group
                let t = UInt32(base[0]) | (UInt32(base[1]) << 8) | (UInt32(base[2]) << 16)
                let d = (t & 0x0024_9249) &+ ((t >> 1) & 0x0024_9249) &+ ((t >> 2) & 0x0024_9249)
                for j in 0..<4 {
                    let a = Int16(truncatingIfNeeded: (d >> UInt32(6 * j)) & 7)
                    let b = Int16(truncatingIfNeeded: (d >> UInt32(6 * j + 3)) & 7)
                    r[4 * group + j] = a &- b
                }
            }
        }
    }
}
