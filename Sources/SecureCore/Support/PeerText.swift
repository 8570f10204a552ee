/// Text that came from another wallet or an issuer (a note, a display name, a label): data to show, never
/// to obey. `escaped` makes every control and format character visible, so a peer's note cannot move the
/// cursor, erase a line, reorder the text around it (bidi overrides and isolates) or hide characters (zero
/// width), and it cuts the text to a limit. Terminal text, JSON, CSV and HTML each escape it their own way;
/// this is the terminal's. See docs/THREAT-MODEL.md, "Peer text".
public enum PeerText {
    /// Peer text shown in one field is cut to this many characters (after escaping), with "…" when cut:
    /// a note is a line for a person, and a longer one could push the prompt off the screen.
    public static let shownCharacterCountMax = 120

    /// Whether `scalar` must never reach a terminal raw: C0 and C1 controls, DEL, and the format and
    /// separator characters that change how the text around them is shown.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true // C0 (ESC, CR, LF, BS…), DEL, C1 (CSI 0x9B…)
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true // bidi marks, embeddings, isolates
        case 0x200B...0x200D, 0x2060...0x2064, 0xFEFF, 0x180E: return true // zero-width and invisible operators
        case 0x2028, 0x2029, 0x0085: return true // line and paragraph separators, NEL
        case 0xFFF9...0xFFFB, 0xE0001, 0xE0020...0xE007F: return true // interlinear annotation, tags
        default:
            // Default-ignorable code points draw nothing (Hangul fillers U+115F, U+3164, U+FFA0, the grapheme
            // joiner U+034F, variation selectors, Khmer vowel inherents): a note made of them looks empty.
            return scalar.properties.isDefaultIgnorableCodePoint
                || scalar.properties.generalCategory == .format || scalar.properties.generalCategory == .control
                || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator
        }
    }

    /// Whether text holds anything `escaped` would change: what our own encoder refuses in a note or name.
    public static func hasUnsafeCharacters(_ text: String) -> Bool { text.unicodeScalars.contains(where: isUnsafe) }

    /// The text with each unsafe character shown as `\u{…}` (a backslash as `\\`), cut to `limit`
    /// characters with "…". The result holds printable characters only.
    public static func escaped(_ text: String, limit: Int = shownCharacterCountMax, quotes: Bool = false) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            let piece: String
            if scalar == "\\" {
                piece = "\\\\"
            } else if quotes && scalar == "\"" {
                piece = "\\\""
            } else if isUnsafe(scalar) {
                piece = "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                piece = String(scalar)
            }
            if count + piece.unicodeScalars.count > limit {
                out += "…"
                return out
            }
            out += piece
            count += piece.unicodeScalars.count
        }
        return out
    }

    /// Peer text in double quotes, escaped: how prompts and events show a note or a chosen name.
    public static func quoted(_ text: String, limit: Int = shownCharacterCountMax) -> String {
        "\"" + escaped(text, limit: limit, quotes: true) + "\""
    }
}
