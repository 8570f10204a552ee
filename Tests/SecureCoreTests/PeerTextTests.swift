import SecureCore
import Testing

/// Peer text (issue 13, case 1): every control and format character comes out visible, nothing else changes,
/// and the cut is marked.
@Suite("Peer text is data")
struct PeerTextTests {
    /// Invisible, default-ignorable characters (found by the attack on issue 13: Hangul fillers, the grapheme
    /// joiner, variation selectors, Khmer inherent vowels) are escaped and refused like format characters.
    @Test func defaultIgnorableCharactersAreEscaped() {
        let text = "\u{3164}\u{115F}\u{1160}\u{FFA0}\u{034F}\u{17B4}\u{17B5}\u{FE0F}"
        #expect(PeerText.hasUnsafeCharacters(text))
        #expect(PeerText.escaped(text) == "\\u{3164}\\u{115F}\\u{1160}\\u{FFA0}\\u{34F}\\u{17B4}\\u{17B5}\\u{FE0F}")
    }

    @Test(arguments: [
        ("\r\u{1B}[2KPay", "\\u{D}\\u{1B}[2KPay"),
        ("\u{9B}2K", "\\u{9B}2K"),
        ("a\u{202E}b\u{202C}", "a\\u{202E}b\\u{202C}"),
        ("x\u{2066}y\u{2069}", "x\\u{2066}y\\u{2069}"),
        ("zero\u{200B}\u{200D}\u{FEFF}width", "zero\\u{200B}\\u{200D}\\u{FEFF}width"),
        ("line\u{2028}para\u{2029}nel\u{85}", "line\\u{2028}para\\u{2029}nel\\u{85}"),
        ("bell\u{7}del\u{7F}", "bell\\u{7}del\\u{7F}"),
        ("back\\slash", "back\\\\slash"),
        ("Café ☕ 4,50 €", "Café ☕ 4,50 €"),
    ])
    func escapes(_ input: String, _ expected: String) {
        #expect(PeerText.escaped(input) == expected)
        #expect(PeerText.hasUnsafeCharacters(input) == (input != expected && !input.contains("\\")))
        #expect(!PeerText.escaped(input).unicodeScalars.contains(where: PeerText.isUnsafe))
    }

    @Test func quotesAndCuts() {
        #expect(PeerText.quoted("say \"hi\"") == "\"say \\\"hi\\\"\"")
        let long = String(repeating: "x", count: 500)
        let shown = PeerText.escaped(long)
        #expect(shown.count == PeerText.shownCharacterCountMax + 1 && shown.hasSuffix("…"))
        // An escape is never cut in half.
        let escapes = String(repeating: "\u{1B}", count: 40)
        #expect(PeerText.escaped(escapes, limit: 20) == "\\u{1B}\\u{1B}\\u{1B}…")
    }

    /// Every scalar below U+3000 and the specials: whatever goes in, nothing unsafe comes out.
    @Test func nothingUnsafeSurvives() {
        var all = ""
        for value in 0..<0x3000 { if let scalar = Unicode.Scalar(value) { all.unicodeScalars.append(scalar) } }
        for value in 0xFFF0...0xFFFF { if let scalar = Unicode.Scalar(value) { all.unicodeScalars.append(scalar) } }
        #expect(!PeerText.escaped(all, limit: Int.max).unicodeScalars.contains(where: PeerText.isUnsafe))
    }
}
