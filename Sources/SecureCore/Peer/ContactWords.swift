import SecureCrypto

/// What the contact words are computed from: only values fixed before either side could see the other's
/// contribution, so a man in the middle cannot grind them (docs/PROTOCOL.md, "Contact verification words").
///
/// These are the secure channel's SAS inputs — the initiator's commitment and both contributions, as the
/// channel's handshake summary gives them — and nothing else. There is deliberately no field for a KEM
/// ciphertext, a shared secret or the channel binding: whoever encapsulates chooses those after seeing the
/// honest side's values, so a relay could try many of them until the words matched. For the same reason there
/// is no field for a wallet id: identities cross only after the channel is up, when every value above is
/// known, and a relay can make new wallets (new ids) as fast as it can hash. The words authenticate the
/// channel; the identities are bound to it by the signed contact measurements, which cover its binding.
public struct ContactWordsInput: Equatable, Sendable {
    /// A field's length limit. The largest is a contribution: 1 + 1 + 2 × 8 suites + 2 + a 4,096-byte key + 16
    /// random bytes = 4,132 bytes (docs/PROTOCOL.md, "Contribution"); the channel refuses anything longer
    /// before a summary exists, so a longer field here is our own bug.
    public static let fieldByteCountMax = 4_132

    /// The initiator's commitment to its contribution (the channel's `commit` message).
    public let commitment: [UInt8]
    /// The initiator's contribution, as revealed and checked against the commitment.
    public let initiatorContribution: [UInt8]
    /// The responder's contribution (the channel's `hello`).
    public let responderContribution: [UInt8]

    /// The inputs of one exchange. Both sides pass the same values in the same roles: the channel's
    /// initiator first, whichever side this is.
    public init(commitment: [UInt8], initiatorContribution: [UInt8], responderContribution: [UInt8]) {
        for field in [commitment, initiatorContribution, responderContribution] {
            precondition(field.count <= Self.fieldByteCountMax, "a channel value longer than the channel allows")
        }
        self.commitment = commitment
        self.initiatorContribution = initiatorContribution
        self.responderContribution = responderContribution
    }

    /// The canonical encoding: the label `"secure-contact-words-v1"` ‖ 0x00, then each field as a 2-byte
    /// big-endian length and its bytes, in the order declared above.
    public var encoded: [UInt8] {
        var writer = ByteWriter(
            capacity: 32 + commitment.count + initiatorContribution.count + responderContribution.count)
        writer.write(raw: DomainLabel.bytes(ContactWords.label))
        for field in [commitment, initiatorContribution, responderContribution] {
            writer.write(prefixed16: field, max: Self.fieldByteCountMax)
        }
        return writer.bytes
    }
}

/// The five words two people read aloud to each other when they exchange contacts: five distinct words of
/// the EFF's large list (7,776 words), drawn without bias from SHAKE256 of `ContactWordsInput.encoded`.
/// A man in the middle who makes both sides show the same words must guess a code of
/// log2(7776 · 7775 · 7774 · 7773 · 7772) ≈ 64.62 bits in the one try each exchange gives him.
///
/// Contact words are meant to be spoken; recovery words (`RecoveryWords`, BIP-39) never are. The two lists
/// and the code that reads them are separate on purpose, so nothing can show one kind where the other belongs.
public struct ContactWords: Equatable, Sendable {
    /// The domain-separation label; a change to the inputs, the list or the walk needs a new one.
    public static let label = "secure-contact-words-v1"
    /// Words in a code.
    public static let wordCount = 5
    /// Words in the list: 6^5, one per roll of five dice.
    public static let listCount = 7_776
    /// SHA-256 of the list's words joined by "\n" with a final "\n" (what Debian's file holds once each
    /// line's dice number and tab are cut off).
    public static let listSHA256 = "6d557f0693958fb5e650b68b5bee585eb82cf4da32965505c789e924743bc522"
    /// Each draw reads two bytes of the stream and keeps their low 13 bits (8,192 values, the smallest power
    /// of two at least 7,776); a value of 7,776 or more, or a word already drawn, is skipped, never reduced.
    static let drawMask: UInt16 = 0x1fff
    /// 64 bytes give 32 draws; running out of them needs 28 skips, with probability below 2^-105.
    static let streamByteCountFirst = 64
    /// 4,096 bytes give 2,048 draws; running out of them has probability below 2^-8,000, so it is a broken
    /// SHAKE256, not a case to handle.
    static let streamByteCountMax = 4_096

    /// The list, in order.
    public static let list: [String] = effLargeList.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)

    /// The five list indexes, in the order they are read.
    public let indices: [Int]

    /// The words of one exchange.
    public init(_ input: ContactWordsInput) {
        let encoded = input.encoded
        // SHAKE256's output is prefix-consistent: the longer stream starts with the shorter one, so asking
        // again for more continues the same walk.
        for byteCount in [Self.streamByteCountFirst, Self.streamByteCountMax] {
            if let indices = Self.indices(fromStream: SHAKE256.hash(encoded, outputByteCount: byteCount)) {
                self.indices = indices
                return
            }
        }
        preconditionFailure("SHAKE256 gave 2,048 draws without five distinct words in range")
    }

    /// The words, in order.
    public var words: [String] { indices.map { Self.list[$0] } }

    /// The words as one line to read aloud.
    public var text: String { words.joined(separator: " ") }

    /// Walks `stream` two bytes at a time (big-endian), keeping each draw's low 13 bits when they name a word
    /// not drawn yet. Nil when the stream ends before five are drawn.
    static func indices(fromStream stream: [UInt8]) -> [Int]? {
        var chosen: [Int] = []
        var offset = 0
        while chosen.count < wordCount {
            guard offset + 2 <= stream.count else { return nil }
            let draw = Int((UInt16(stream[offset]) << 8 | UInt16(stream[offset + 1])) & drawMask)
            offset += 2
            if draw < listCount && !chosen.contains(draw) { chosen.append(draw) }
        }
        return chosen
    }
}
