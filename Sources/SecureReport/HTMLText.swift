import SecureCore

/// Text into HTML. Everything the report writes between tags or inside an attribute passes through here:
/// nothing another wallet chose (a note, a name, a category) can open an element, close one, or end an
/// attribute. See docs/THREAT-MODEL.md, "Peer text".
public enum HTMLText {
    /// The text with `&`, `<`, `>`, `"` and `'` written as character references, safe both between tags
    /// and in a quoted attribute value.
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// Text another wallet chose, as the report shows it: control and format characters (a newline, a
    /// bidi override, a zero-width space) visible as `\u{…}` like on the terminal, so a note cannot reorder
    /// or hide the text around it, then escaped for HTML. A note is at most 512 bytes, so nothing is cut.
    public static func peer(_ text: String) -> String {
        escaped(PeerText.escaped(text, limit: peerCharacterCountMax))
    }

    /// Peer text in the report is cut at this many characters (after making controls visible): a control
    /// becomes at most 6 characters per byte it takes (`\u{1B}`, `\u{9B}`, `\u{E0020}`), so a whole
    /// 512-byte note always fits.
    public static let peerCharacterCountMax = 4096
}
