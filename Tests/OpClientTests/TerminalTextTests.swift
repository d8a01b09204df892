import OpClient
import Testing

/// Display width and cutting to it.
struct TerminalTextTests {
    @Test func widthCountsColumnsNotCharacters() {
        #expect(TerminalText.width("queue-7") == 7)
        #expect(TerminalText.width("画像処理") == 8, "wide characters take two columns")
        #expect(TerminalText.width("e\u{301}") == 1, "a combining accent takes none")
        #expect(TerminalText.width("…—") == 2)
    }

    @Test func fitCutsWithAnEllipsisAndNeverOverflows() {
        #expect(TerminalText.fit("short", 10) == "short")
        #expect(TerminalText.fit("a-very-long-queue-name", 10) == "a-very-lo…")
        #expect(TerminalText.fit("a-very-long-queue-name", 10, ellipsis: "...") == "a-very-...")
        let wide = TerminalText.fit("画像処理パイプライン", 9)
        #expect(TerminalText.width(wide) <= 9, "\(wide)")
        #expect(wide.hasSuffix("…"))
        #expect(TerminalText.fit("new\nline\u{1B}[2J", 40) == "new?line?[2J", "controls would move the cursor")
        for width in 0...12 {
            #expect(TerminalText.width(TerminalText.fit("画a像b処c理d", width)) <= width)
            #expect(TerminalText.width(TerminalText.pad("画a像", width)) == width)
        }
    }
}
