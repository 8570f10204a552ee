// Arithmetic in R_q = Z_3329[X]/(X^256 + 1) for ML-KEM (FIPS 203 §4.3), on 16-bit coefficients.
//
// Constant-time discipline for this whole folder: secret values are only combined with wrapping
// operators (&+, &-, &*, shifts, masks) and converted with truncatingIfNeeded, so the compiler emits no
// overflow branch on them; no `/` or `%` appears anywhere (KyberSlash), reductions are Montgomery and
// Barrett multiply-and-shift forms; no branch or index depends on a secret. scripts/ct-check enforces
// this with valgrind and by scanning the release machine code for div/idiv.

typealias Coefficients = UnsafeMutablePointer<Int16>

enum MLKEMField {
    static let q: Int16 = 3329
    static let q32: Int32 = 3329
    /// q⁻¹ mod 2¹⁶, as a signed 16-bit value.
    static let qInverse: Int16 = -3327
    /// 2³² mod q: multiplying by it through a Montgomery reduction moves a value into the Montgomery domain.
    static let montgomerySquare: Int16 = 1353
    /// 2³² / 128 mod q: the inverse NTT's final scaling, which also cancels the 2⁻¹⁶ of pointwise products.
    static let inverseNTTScale: Int16 = 1441
    /// ⌈2⁴⁰ / q⌉. For every numerator below 2²³, (n · this) >> 40 equals ⌊n / q⌋ exactly (checked for all
    /// numerators Compress can produce), so Compress needs no division.
    static let compressMultiplier: UInt64 = 330_282_857
    /// Round(2²⁶ / q), for Barrett reduction.
    static let barrettMultiplier: Int32 = 20159

    /// a · 2⁻¹⁶ mod q, in (−q, q), for |a| < 2¹⁵ · q.
    @inline(__always)
    static func montgomeryReduce(_ a: Int32) -> Int16 {
        let t = Int16(truncatingIfNeeded: a) &* qInverse
        return Int16(truncatingIfNeeded: (a &- Int32(t) &* q32) >> 16)
    }

    /// a · b · 2⁻¹⁶ mod q.
    @inline(__always)
    static func multiply(_ a: Int16, _ b: Int16) -> Int16 {
        montgomeryReduce(Int32(a) &* Int32(b))
    }

    /// a mod q, centred in [−(q−1)/2, (q−1)/2], for any Int16.
    @inline(__always)
    static func barrettReduce(_ a: Int16) -> Int16 {
        let t = Int16(truncatingIfNeeded: (barrettMultiplier &* Int32(a) &+ (1 << 25)) >> 26)
        return a &- t &* q
    }

    /// A centred representative in (−q, q) moved to [0, q) without a branch.
    @inline(__always)
    static func toCanonical(_ a: Int16) -> Int16 {
        a &+ ((a >> 15) & q)
    }

    /// The 128 powers ζ^BitRev₇(i) of ζ = 17, times 2¹⁶ mod q, centred. Public constants, written out so
    /// that no table is computed (with division) at run time.
    // Written once at first use and only read afterwards, so sharing it across threads is safe.
    nonisolated(unsafe) static let zetas: UnsafeMutablePointer<Int16> = {
        let values: [Int16] = [
            -1044, -758, -359, -1517, 1493, 1422, 287, 202, -171, 622, 1577, 182, 962, -1202, -1474, 1468,
            573, -1325, 264, 383, -829, 1458, -1602, -130, -681, 1017, 732, 608, -1542, 411, -205, -1571,
            1223, 652, -552, 1015, -1293, 1491, -282, -1544, 516, -8, -320, -666, -1618, -1162, 126, 1469,
            -853, -90, -271, 830, 107, -1421, -247, -951, -398, 961, -1508, -725, 448, -1065, 677, -1275,
            -1103, 430, 555, 843, -1251, 871, 1550, 105, 422, 587, 177, -235, -291, -460, 1574, 1653,
            -246, 778, 1159, -147, -777, 1483, -602, 1119, -1590, 644, -872, 349, 418, 329, -156, -75,
            817, 1097, 603, 610, 1322, -1285, -1465, 384, -1215, -136, 1218, -1335, -874, 220, -1187, -1659,
            -1185, -1530, -1278, 794, -1510, -854, -870, 478, -108, -308, 996, 991, 958, -1460, 1522, 1628,
        ]
        let table = UnsafeMutablePointer<Int16>.allocate(capacity: 128)
        table.initialize(from: values, count: 128)
        return table
    }()
}

/// Lane-parallel versions of the field operations, on 16 or 8 coefficients at once. They use the
/// 16-bit high/low multiply pair (LLVM lowers `mulHigh` to pmulhw), so the vector unit does the
/// Montgomery and Barrett reductions without 32-bit lanes.
enum MLKEMVector {
    @inline(__always)
    static func mulHigh16(_ a: SIMD16<Int16>, _ b: SIMD16<Int16>) -> SIMD16<Int16> {
        SIMD16<Int16>(
            truncatingIfNeeded: (SIMD16<Int32>(truncatingIfNeeded: a) &* SIMD16<Int32>(truncatingIfNeeded: b)) &>> 16)
    }

    @inline(__always)
    static func mulHigh8(_ a: SIMD8<Int16>, _ b: SIMD8<Int16>) -> SIMD8<Int16> {
        SIMD8<Int16>(
            truncatingIfNeeded: (SIMD8<Int32>(truncatingIfNeeded: a) &* SIMD8<Int32>(truncatingIfNeeded: b)) &>> 16)
    }

    /// a · b · 2⁻¹⁶ mod q per lane: high(a·b) − high(low(a·b)·q⁻¹ · q). The low halves of a·b and t·q are
    /// equal by construction, so the difference of the high halves is exact.
    @inline(__always)
    static func multiply16(_ a: SIMD16<Int16>, _ b: SIMD16<Int16>) -> SIMD16<Int16> {
        let t = (a &* b) &* SIMD16(repeating: MLKEMField.qInverse)
        return mulHigh16(a, b) &- mulHigh16(t, SIMD16(repeating: MLKEMField.q))
    }

    @inline(__always)
    static func multiply8(_ a: SIMD8<Int16>, _ b: SIMD8<Int16>) -> SIMD8<Int16> {
        let t = (a &* b) &* SIMD8(repeating: MLKEMField.qInverse)
        return mulHigh8(a, b) &- mulHigh8(t, SIMD8(repeating: MLKEMField.q))
    }

    /// Barrett reduction per lane: t = ⌊(high(a · 20159) + 2⁹) / 2¹⁰⌋, a − t·q. Within one q of the
    /// scalar form's centred result at worst, |result| ≤ (q+1)/2.
    @inline(__always)
    static func reduce16(_ a: SIMD16<Int16>) -> SIMD16<Int16> {
        let t = (mulHigh16(a, SIMD16(repeating: Int16(MLKEMField.barrettMultiplier))) &+ 512) &>> 10
        return a &- t &* SIMD16(repeating: MLKEMField.q)
    }

    @inline(__always)
    static func reduce8(_ a: SIMD8<Int16>) -> SIMD8<Int16> {
        let t = (mulHigh8(a, SIMD8(repeating: Int16(MLKEMField.barrettMultiplier))) &+ 512) &>> 10
        return a &- t &* SIMD8(repeating: MLKEMField.q)
    }

    /// ζ values for the last two forward layers, one per lane: layer "4" (blocks of 8 coefficients, ζ
    /// index 32 + block) as 16 vectors covering two blocks each, then layer "2" (blocks of 4, ζ index
    /// 64 + block) as 16 vectors covering four blocks each. The inverse tables run the indices backwards.
    // Written once at first use and only read afterwards.
    nonisolated(unsafe) static let forwardTail: UnsafeMutablePointer<SIMD8<Int16>> = makeTail(inverse: false)
    nonisolated(unsafe) static let inverseTail: UnsafeMutablePointer<SIMD8<Int16>> = makeTail(inverse: true)

    private static func makeTail(inverse: Bool) -> UnsafeMutablePointer<SIMD8<Int16>> {
        let table = UnsafeMutablePointer<SIMD8<Int16>>.allocate(capacity: 32)
        let zetas = MLKEMField.zetas
        for vector in 0..<16 {
            var four = SIMD8<Int16>(), two = SIMD8<Int16>()
            for lane in 0..<8 {
                let blockOfEight = 2 * vector + (lane >> 2)
                let blockOfFour = 4 * vector + (lane >> 1)
                four[lane] = zetas[inverse ? 63 - blockOfEight : 32 + blockOfEight]
                two[lane] = zetas[inverse ? 127 - blockOfFour : 64 + blockOfFour]
            }
            table[vector] = four
            table[16 + vector] = two
        }
        return table
    }

    /// Splits 16 coefficients [a b a′ b′] (4 each) into tops [a a′] and bottoms [b b′].
    @inline(__always)
    static func splitFours(_ x: SIMD8<Int16>, _ y: SIMD8<Int16>) -> (SIMD8<Int16>, SIMD8<Int16>) {
        let x64 = unsafeBitCast(x, to: SIMD2<UInt64>.self), y64 = unsafeBitCast(y, to: SIMD2<UInt64>.self)
        return (
            unsafeBitCast(SIMD2<UInt64>(x64[0], y64[0]), to: SIMD8<Int16>.self),
            unsafeBitCast(SIMD2<UInt64>(x64[1], y64[1]), to: SIMD8<Int16>.self)
        )
    }

    /// Joins tops and bottoms back into [a b a′ b′]: the split swaps the middle two groups of four, so it is
    /// its own inverse.
    @inline(__always)
    static func joinFours(_ top: SIMD8<Int16>, _ bottom: SIMD8<Int16>) -> (SIMD8<Int16>, SIMD8<Int16>) {
        splitFours(top, bottom)
    }

    /// Splits 16 coefficients [a₀ b₀ a₁ b₁ a₂ b₂ a₃ b₃] (2 each) into tops [a₀ a₁ a₂ a₃] and bottoms.
    @inline(__always)
    static func splitTwos(_ x: SIMD8<Int16>, _ y: SIMD8<Int16>) -> (SIMD8<Int16>, SIMD8<Int16>) {
        let x32 = unsafeBitCast(x, to: SIMD4<UInt32>.self), y32 = unsafeBitCast(y, to: SIMD4<UInt32>.self)
        return (
            unsafeBitCast(SIMD4<UInt32>(x32[0], x32[2], y32[0], y32[2]), to: SIMD8<Int16>.self),
            unsafeBitCast(SIMD4<UInt32>(x32[1], x32[3], y32[1], y32[3]), to: SIMD8<Int16>.self)
        )
    }

    @inline(__always)
    static func joinTwos(_ top: SIMD8<Int16>, _ bottom: SIMD8<Int16>) -> (SIMD8<Int16>, SIMD8<Int16>) {
        let t32 = unsafeBitCast(top, to: SIMD4<UInt32>.self), b32 = unsafeBitCast(bottom, to: SIMD4<UInt32>.self)
        return (
            unsafeBitCast(SIMD4<UInt32>(t32[0], b32[0], t32[1], b32[1]), to: SIMD8<Int16>.self),
            unsafeBitCast(SIMD4<UInt32>(t32[2], b32[2], t32[3], b32[3]), to: SIMD8<Int16>.self)
        )
    }

    @inline(__always)
    static func load16(_ pointer: Coefficients) -> SIMD16<Int16> {
        UnsafeRawPointer(pointer).loadUnaligned(as: SIMD16<Int16>.self)
    }

    @inline(__always)
    static func store16(_ pointer: Coefficients, _ value: SIMD16<Int16>) {
        UnsafeMutableRawPointer(pointer).storeBytes(of: value, as: SIMD16<Int16>.self)
    }

    @inline(__always)
    static func load8(_ pointer: Coefficients) -> SIMD8<Int16> {
        UnsafeRawPointer(pointer).loadUnaligned(as: SIMD8<Int16>.self)
    }

    @inline(__always)
    static func store8(_ pointer: Coefficients, _ value: SIMD8<Int16>) {
        UnsafeMutableRawPointer(pointer).storeBytes(of: value, as: SIMD8<Int16>.self)
    }
}

enum MLKEMPoly {
    /// Forward NTT in place (FIPS 203 Algorithm 9), Cooley–Tukey butterflies with Montgomery
    /// multiplication by the stored ζ·2¹⁶; output reduced and centred. Layers with 8 or more
    /// coefficients per half-block run on vectors; the last two layers are scalar.
    static func ntt(_ r: Coefficients) {
        let zetas = MLKEMField.zetas
        var k = 1
        var length = 128
        while length >= 16 {
            var start = 0
            while start < 256 {
                let zeta = SIMD16<Int16>(repeating: zetas[k])
                k &+= 1
                var j = start
                while j < start &+ length {
                    let top = MLKEMVector.load16(r + j), bottom = MLKEMVector.load16(r + j + length)
                    let t = MLKEMVector.multiply16(zeta, bottom)
                    MLKEMVector.store16(r + j + length, top &- t)
                    MLKEMVector.store16(r + j, top &+ t)
                    j &+= 16
                }
                start &+= 2 &* length
            }
            length >>= 1
        }
        // length 8
        var start = 0
        while start < 256 {
            let zeta = SIMD8<Int16>(repeating: zetas[k])
            k &+= 1
            let top = MLKEMVector.load8(r + start), bottom = MLKEMVector.load8(r + start + 8)
            let t = MLKEMVector.multiply8(zeta, bottom)
            MLKEMVector.store8(r + start + 8, top &- t)
            MLKEMVector.store8(r + start, top &+ t)
            start &+= 16
        }
        // lengths 4 and 2: regroup lanes so that each vector holds only tops or only bottoms.
        for vector in 0..<16 {
            let base = r + 16 &* vector
            let (top, bottom) = MLKEMVector.splitFours(MLKEMVector.load8(base), MLKEMVector.load8(base + 8))
            let t = MLKEMVector.multiply8(MLKEMVector.forwardTail[vector], bottom)
            let (x, y) = MLKEMVector.joinFours(top &+ t, top &- t)
            MLKEMVector.store8(base, x)
            MLKEMVector.store8(base + 8, y)
        }
        for vector in 0..<16 {
            let base = r + 16 &* vector
            let (top, bottom) = MLKEMVector.splitTwos(MLKEMVector.load8(base), MLKEMVector.load8(base + 8))
            let t = MLKEMVector.multiply8(MLKEMVector.forwardTail[16 &+ vector], bottom)
            let (x, y) = MLKEMVector.joinTwos(top &+ t, top &- t)
            MLKEMVector.store8(base, x)
            MLKEMVector.store8(base + 8, y)
        }
        reduce(r)
    }

    /// Inverse NTT in place (FIPS 203 Algorithm 10), Gentleman–Sande butterflies. The final scaling by
    /// 1441 = 2³²/128 mod q also removes the 2⁻¹⁶ left by `multiplyAccumulate`.
    static func inverseNTT(_ r: Coefficients) {
        let zetas = MLKEMField.zetas
        // lengths 2 and 4 first, on regrouped lanes as in `ntt`.
        for vector in 0..<16 {
            let base = r + 16 &* vector
            let (top, bottom) = MLKEMVector.splitTwos(MLKEMVector.load8(base), MLKEMVector.load8(base + 8))
            let (x, y) = MLKEMVector.joinTwos(
                MLKEMVector.reduce8(top &+ bottom),
                MLKEMVector.multiply8(MLKEMVector.inverseTail[16 &+ vector], bottom &- top))
            MLKEMVector.store8(base, x)
            MLKEMVector.store8(base + 8, y)
        }
        for vector in 0..<16 {
            let base = r + 16 &* vector
            let (top, bottom) = MLKEMVector.splitFours(MLKEMVector.load8(base), MLKEMVector.load8(base + 8))
            let (x, y) = MLKEMVector.joinFours(
                MLKEMVector.reduce8(top &+ bottom),
                MLKEMVector.multiply8(MLKEMVector.inverseTail[vector], bottom &- top))
            MLKEMVector.store8(base, x)
            MLKEMVector.store8(base + 8, y)
        }
        var k = 31
        var length = 8
        // length 8
        var start = 0
        while start < 256 {
            let zeta = SIMD8<Int16>(repeating: zetas[k])
            k &-= 1
            let top = MLKEMVector.load8(r + start), bottom = MLKEMVector.load8(r + start + 8)
            MLKEMVector.store8(r + start, MLKEMVector.reduce8(top &+ bottom))
            MLKEMVector.store8(r + start + 8, MLKEMVector.multiply8(zeta, bottom &- top))
            start &+= 16
        }
        length = 16
        while length <= 128 {
            var start = 0
            while start < 256 {
                let zeta = SIMD16<Int16>(repeating: zetas[k])
                k &-= 1
                var j = start
                while j < start &+ length {
                    let top = MLKEMVector.load16(r + j), bottom = MLKEMVector.load16(r + j + length)
                    MLKEMVector.store16(r + j, MLKEMVector.reduce16(top &+ bottom))
                    MLKEMVector.store16(r + j + length, MLKEMVector.multiply16(zeta, bottom &- top))
                    j &+= 16
                }
                start &+= 2 &* length
            }
            length <<= 1
        }
        let scale = SIMD16<Int16>(repeating: MLKEMField.inverseNTTScale)
        var j = 0
        while j < 256 {
            MLKEMVector.store16(r + j, MLKEMVector.multiply16(MLKEMVector.load16(r + j), scale))
            j &+= 16
        }
    }

    /// r = Σ_j a_j ∘ b_j in the NTT domain (FIPS 203 Algorithms 11–12), scaled by 2⁻¹⁶. a_j is at
    /// a + j·aStride·256 and b_j at b + j·256, so one routine serves Â·ŝ (stride 1) and Âᵀ·ŷ (stride k).
    /// Products are summed in 32 bits and reduced once per coefficient; with |b| ≤ q/2 and |a| < q the
    /// sums stay below 2¹⁵·q for k ≤ 4.
    @inline(__always)
    static func multiplyAccumulate(into r: Coefficients, a: Coefficients, aStride: Int, b: Coefficients, count: Int) {
        let zetas = MLKEMField.zetas
        let aStep = aStride &* 256
        for pair in 0..<128 {
            let index = pair &* 2
            var even: Int32 = 0
            var odd: Int32 = 0
            var cross: Int32 = 0
            var aTerm = a + index
            var bTerm = b + index
            for _ in 0..<count {
                let a0 = Int32(aTerm[0]), a1 = Int32(aTerm[1])
                let b0 = Int32(bTerm[0]), b1 = Int32(bTerm[1])
                even &+= a0 &* b0
                odd &+= a1 &* b1
                cross &+= a0 &* b1 &+ a1 &* b0
                aTerm += aStep
                bTerm += 256
            }
            // Pairs alternate between γ = ζ^(2·BitRev₇(i)+1) and −γ; the table holds them at 64 + i/2.
            let zeta = Int32(zetas[64 + (pair >> 1)])
            let signedZeta = (pair & 1) == 0 ? zeta : 0 &- zeta
            r[index] = MLKEMField.montgomeryReduce(Int32(MLKEMField.montgomeryReduce(odd)) &* signedZeta &+ even)
            r[index + 1] = MLKEMField.montgomeryReduce(cross)
        }
    }

    /// Reduces every coefficient with a (vector) Barrett reduction: |result| ≤ (q+1)/2.
    @inline(__always)
    static func reduce(_ r: Coefficients) {
        var j = 0
        while j < 256 {
            MLKEMVector.store16(r + j, MLKEMVector.reduce16(MLKEMVector.load16(r + j)))
            j &+= 16
        }
    }

    /// r += a.
    @inline(__always)
    static func add(_ r: Coefficients, _ a: Coefficients) {
        var j = 0
        while j < 256 {
            MLKEMVector.store16(r + j, MLKEMVector.load16(r + j) &+ MLKEMVector.load16(a + j))
            j &+= 16
        }
    }

    /// r = a − r.
    @inline(__always)
    static func subtractFrom(_ r: Coefficients, _ a: Coefficients) {
        var j = 0
        while j < 256 {
            MLKEMVector.store16(r + j, MLKEMVector.load16(a + j) &- MLKEMVector.load16(r + j))
            j &+= 16
        }
    }

    /// Moves coefficients into the Montgomery domain (times 2¹⁶), undoing `multiplyAccumulate`'s 2⁻¹⁶.
    @inline(__always)
    static func toMontgomery(_ r: Coefficients) {
        let factor = SIMD16<Int16>(repeating: MLKEMField.montgomerySquare)
        var j = 0
        while j < 256 {
            MLKEMVector.store16(r + j, MLKEMVector.multiply16(MLKEMVector.load16(r + j), factor))
            j &+= 16
        }
    }
}
