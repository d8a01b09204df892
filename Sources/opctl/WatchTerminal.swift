import Foundation
import OpClient

/// The terminal's size: ioctl(TIOCGWINSZ) on stdout, else $COLUMNS × $LINES, else 80 × 24. Asked at
/// every redraw, so a resized window (SIGWINCH) is followed at the next one without a signal handler.
enum TerminalSize {
    static func current() -> (columns: Int, rows: Int) {
        var ws = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return (Int(ws.ws_col), Int(ws.ws_row))
        }
        let env = ProcessInfo.processInfo.environment
        func positive(_ name: String) -> Int? { env[name].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } }
        return (positive("COLUMNS") ?? 80, positive("LINES") ?? 24)
    }

    /// Whether the locale says UTF-8 (else the view draws "..." and "-" instead of "…" and "—").
    static var unicode: Bool {
        let env = ProcessInfo.processInfo.environment
        let locale = [env["LC_ALL"], env["LC_CTYPE"], env["LANG"]].compactMap { $0 }.first { !$0.isEmpty } ?? ""
        let l = locale.lowercased()
        return l.contains("utf-8") || l.contains("utf8")
    }
}

/// The live view on a terminal, redrawn in place: the cursor goes back up over the lines drawn last
/// time, each line is cleared before it is written (clearing after a full-width line would erase its
/// last column), and what is left below is cleared. A changed size clears the screen first: the
/// terminal may have re-wrapped the old lines.
struct TerminalView {
    private var drawn = 0
    private var size: (columns: Int, rows: Int)?
    private let unicode = TerminalSize.unicode

    /// Lines are about to be written below the view; the next one is drawn under them.
    mutating func interrupt() { drawn = 0 }

    mutating func draw(_ model: WatchModel, at now: Double) {
        let current = TerminalSize.current()
        let lines = WatchScreen(width: current.columns, height: current.rows, unicode: unicode).lines(model, at: now)
        var out = ""
        if drawn > 0 {
            if let size, size != current { out += "\u{1B}[H\u{1B}[2J" } else { out += "\u{1B}[\(drawn)A\r" }
        }
        for l in lines { out += "\u{1B}[2K" + l + "\n" }
        out += "\u{1B}[J"
        FileHandle.standardOutput.write(Data(out.utf8))
        drawn = lines.count
        size = current
    }
}
