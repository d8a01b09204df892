/// Text measured in terminal columns, not characters: the live view must never write a line wider than
/// the terminal (it would wrap and push the view up, garbling every later redraw).
public enum TerminalText {
    /// Columns `text` takes: 2 for East Asian wide and emoji characters, 0 for combining marks and
    /// controls, else 1. (An approximation of wcwidth(3) that needs no locale.)
    public static func width(_ text: String) -> Int {
        text.reduce(0) { $0 + width(of: $1) }
    }

    public static func width(of c: Character) -> Int {
        guard let s = c.unicodeScalars.first else { return 0 }
        let v = s.value
        if v < 0x20 || (0x7F..<0xA0).contains(v) { return 0 }
        if v < 0x300 { return 1 }
        if s.properties.generalCategory == .nonspacingMark || s.properties.generalCategory == .enclosingMark
            || v == 0x200B || (0x200C...0x200F).contains(v) { return 0 }
        if isWide(v) || s.properties.isEmojiPresentation { return 2 }
        return 1
    }

    /// East Asian Wide and Fullwidth ranges (Unicode's EastAsianWidth W/F, the large blocks).
    private static func isWide(_ v: UInt32) -> Bool {
        (0x1100...0x115F).contains(v) || (0x2E80...0x303E).contains(v) || (0x3041...0x33FF).contains(v)
            || (0x3400...0x4DBF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xA000...0xA4CF).contains(v)
            || (0xAC00...0xD7A3).contains(v) || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v)
            || (0xFF00...0xFF60).contains(v) || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1F64F).contains(v)
            || (0x1F900...0x1F9FF).contains(v) || (0x20000...0x3FFFD).contains(v)
    }

    /// `text` cut to at most `columns`, ending in `ellipsis` when cut. Controls (a name with a newline or
    /// an escape sequence) become "?": they would move the cursor.
    public static func fit(_ text: String, _ columns: Int, ellipsis: String = "…") -> String {
        guard columns > 0 else { return "" }
        let clean = String(text.map { c -> Character in
            guard let v = c.unicodeScalars.first?.value else { return c }
            return v < 0x20 || (0x7F..<0xA0).contains(v) ? "?" : c
        })
        if width(clean) <= columns { return clean }
        let room = columns - width(ellipsis)
        guard room >= 0 else { return String(repeating: ".", count: columns) }
        var out = "", used = 0
        for c in clean {
            let w = width(of: c)
            if used + w > room { break }
            out.append(c)
            used += w
        }
        return out + ellipsis
    }

    /// `text` fitted to exactly `columns`: cut with an ellipsis, or padded with spaces (on the right,
    /// or on the left with `right`).
    public static func pad(_ text: String, _ columns: Int, right: Bool = false, ellipsis: String = "…") -> String {
        let t = fit(text, columns, ellipsis: ellipsis)
        let gap = String(repeating: " ", count: max(0, columns - width(t)))
        return right ? gap + t : t + gap
    }
}
