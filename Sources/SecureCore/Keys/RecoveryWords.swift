import SecureCrypto

/// A wallet's recovery secret written as words: 256 bits of entropy as 24 words of BIP-39's English list
/// (BIP-39 "mnemonic" encoding: the entropy, then the first 8 bits of its SHA-256 as a checksum, read as 24
/// 11-bit indexes into the list). Only the encoding is BIP-39's: the words are never run through BIP-39's
/// PBKDF2 seed step; the 32 bytes of entropy are the secret (docs/PROTOCOL.md, "Recovery words").
///
/// A mistyped word is caught first by list membership, then by the checksum, and last (in the wallet) by the
/// derived recovery key not matching the commitment in the key-event log.
///
/// Recovery words are a secret and are never read aloud. The words people do read aloud to each other are
/// `ContactWords` (the EFF's list); the two share no list and no code, so neither can stand in for the other.
public enum RecoveryWords {
    /// Bytes of the secret: 256 bits, the strongest BIP-39 size.
    public static let secretByteCount = 32
    /// Words in a phrase: (256 + 8) / 11.
    public static let wordCount = 24
    /// Words in the list: one per 11-bit value.
    public static let listCount = 2048
    /// The longest word in the list has 8 letters; a word longer than this is no word of the list, and
    /// refusing it early bounds what a typo can make us compare.
    static let wordLengthMax = 8

    /// The list, in order.
    public static let list: [String] = englishList.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
    private static let indexOfWord: [String: Int] = Dictionary(
        uniqueKeysWithValues: list.enumerated().map { ($0.element, $0.offset) })

    /// The 24 words of a 32-byte secret.
    public static func words(of secret: SecretBytes) -> [String] {
        precondition(secret.count == secretByteCount, "a recovery secret is 32 bytes")
        var bits = secret.copyBytes()
        bits.append(SHA256.hash(bits)[0])
        defer { for index in bits.indices { bits[index] = 0 } }
        return (0..<wordCount).map { list[elevenBits(bits, at: $0 * 11)] }
    }

    /// The secret of 24 words, as typed: words are separated by spaces or line breaks and compared in lower
    /// case. Throws `.unknownWord` (naming its position) for a word not in the list, `.wrongCount`, or
    /// `.badChecksum` when every word is in the list but they do not form a valid phrase.
    public static func secret(of phrase: String) throws -> SecretBytes {
        let typed = phrase.lowercased().split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" })
        guard typed.count == wordCount else {
            throw RecoveryWordsError(
                .wrongCount, "the recovery words are \(wordCount) words; \(typed.count) were given")
        }
        var bits = [UInt8](repeating: 0, count: secretByteCount + 1)
        defer { for index in bits.indices { bits[index] = 0 } }
        for (position, word) in typed.enumerated() {
            guard let index = index(of: String(word)) else {
                throw RecoveryWordsError(
                    .unknownWord,
                    "word \(position + 1) of the recovery words is not in the BIP-39 English list; check its spelling")
            }
            setElevenBits(&bits, at: position * 11, to: index)
        }
        let secret = SecretBytes(Array(bits.prefix(secretByteCount)))
        guard SHA256.hash(secret.copyBytes())[0] == bits[secretByteCount] else {
            throw RecoveryWordsError(
                .badChecksum,
                "the recovery words fail BIP-39's checksum: one is mistyped or two are swapped, though each is "
                    + "in the list")
        }
        return secret
    }

    /// The list index of a word (lower case), or nil when it is not in the list.
    public static func index(of word: String) -> Int? {
        guard word.utf8.count <= wordLengthMax else { return nil }
        return indexOfWord[word]
    }

    private static func elevenBits(_ bytes: [UInt8], at offset: Int) -> Int {
        var value = 0
        for bit in offset..<(offset + 11) {
            value = value << 1 | Int(bytes[bit / 8] >> (7 - UInt8(bit % 8)) & 1)
        }
        return value
    }

    private static func setElevenBits(_ bytes: inout [UInt8], at offset: Int, to value: Int) {
        for (step, bit) in (offset..<(offset + 11)).enumerated() where value >> (10 - step) & 1 == 1 {
            bytes[bit / 8] |= 1 << (7 - UInt8(bit % 8))
        }
    }
}

/// Why recovery words were refused. Equal by code.
public typealias RecoveryWordsError = CodedFailure<RecoveryWordsErrorCode>

/// Stable codes for `RecoveryWordsError`.
public enum RecoveryWordsErrorCode: String, FailureCode {
    /// A word that is not in the list.
    case unknownWord = "unknown-word"
    /// Not 24 words.
    case wrongCount = "wrong-count"
    /// Every word is in the list, but the checksum fails.
    case badChecksum = "bad-checksum"
    /// The words are a valid phrase but derive no key this wallet committed to: another wallet's words,
    /// or a word replaced by another that happens to pass the checksum.
    case notThisWallet = "not-this-wallet"
    /// The words typed back at init do not match the ones shown.
    case notConfirmed = "not-confirmed"

    /// Mistyped words are the user's input: a usage error.
    public var kind: FailureKind { .usage }
}
