import Foundation
import WireProtocol

/// The live view as lines for a terminal of `width` × `height`: never a line wider than `width`, never
/// more than `height - 1` lines (the cursor's line stays on screen, so the view does not scroll), and
/// when runs or queues do not fit, the ones with work left are shown and the rest summarised.
///
/// Layout: a title (or the "disconnected" marker), a RUN section, a QUEUE section (each a header and
/// one row per run or queue: progress bar, counts, rate, ETA, elapsed), the workers line, ops no worker
/// can run, and the newest notices (worker lost, re-dispatched, …). Columns are dropped from the least
/// useful up as the width shrinks; the bar takes what is left.
public struct WatchScreen: Sendable {
    public var width: Int
    public var height: Int
    /// Draw "…" and "—"; false: "..." and "-" (a terminal that is not UTF-8).
    public var unicode: Bool
    /// Most notice lines shown.
    public var maxNotices: Int

    public init(width: Int, height: Int, unicode: Bool = true, maxNotices: Int = 5) {
        self.width = max(1, width)
        self.height = max(1, height)
        self.unicode = unicode
        self.maxNotices = maxNotices
    }

    private var ellipsis: String { unicode ? "…" : "..." }
    private var dash: String { unicode ? "—" : "-" }

    /// A column right of the bar. `rank`: lower ranks are kept longer as the width shrinks.
    struct Column {
        var label: String
        var width: Int
        var rank: Int
        var value: (WatchModel.Row) -> String
    }

    var columns: [Column] {
        let c = WatchFormat.count
        return [
            Column(label: "DONE", width: 9, rank: 0) { "\(c($0.finished))/\(c($0.total))" },
            Column(label: "RUN", width: 4, rank: 3) { c($0.onWorkers) },
            Column(label: "RDY", width: 4, rank: 6) { c($0.ready) },
            Column(label: "PEND", width: 4, rank: 7) { c($0.pending) },
            Column(label: "FAIL", width: 4, rank: 4) { c($0.failed) },
            Column(label: "CANC", width: 4, rank: 8) { c($0.cancelled) },
            Column(label: "RATE", width: 6, rank: 1) { [dash] in WatchFormat.rate($0.rate, unknown: dash) },
            Column(label: "ETA", width: 6, rank: 2) { [dash] in
                $0.unfinished == 0 ? "done" : WatchFormat.duration($0.eta, unknown: dash)
            },
            Column(label: "ELAPSED", width: 7, rank: 5) { WatchFormat.duration($0.elapsed, tenths: true, unknown: "-") },
        ]
    }

    /// The narrowest name and bar (brackets included) before columns give way.
    static let minimumName = 10, minimumBar = 8

    /// Column widths for this width: which columns stay, how wide the name and the bar are (bar 0: none).
    func layout(longestName: Int) -> (columns: [Column], name: Int, bar: Int) {
        var kept = columns
        func rightWidth() -> Int { kept.reduce(0) { $0 + 1 + $1.width } }
        while !kept.isEmpty && width - rightWidth() < Self.minimumName + 1 + Self.minimumBar {
            let worst = kept.indices.max { kept[$0].rank < kept[$1].rank }!
            kept.remove(at: worst)
        }
        let left = width - rightWidth()
        var name = min(max(Self.minimumName, longestName), max(Self.minimumName, left - 1 - Self.minimumBar))
        var bar = left - name - 1
        if bar < 5 { bar = 0; name = left }
        return (kept, max(0, min(name, width)), bar)
    }

    // MARK: lines

    public func lines(_ m: WatchModel, at now: Double) -> [String] {
        let budget = max(1, height - 1)
        var out = [title(m, at: now)]
        guard let snapshot = m.snapshot else {
            out.append("waiting for the coordinator's first answer" + ellipsis)
            return finish(out, budget)
        }
        let runs = m.runRows(at: now), queues = m.queueRows(at: now)
        var bottom = [workersLine(snapshot.workers)]
        let unplaceable = snapshot.unplaceable
        if unplaceable.count <= 2 {
            bottom += unplaceable.map { "waiting for a worker: " + $0 }
        } else {
            bottom += ["waiting for a worker: " + unplaceable[0],
                       "waiting for a worker: \(unplaceable.count - 1) more groups of operations (opctl status)"]
        }
        let remaining = budget - out.count - bottom.count
        let runNeed = runs.isEmpty ? 0 : 1 + runs.count
        let queueNeed = queues.isEmpty ? 0 : 1 + queues.count
        let need = max(1, runNeed + queueNeed)
        let wanted = min(m.notices.recent.count, maxNotices)
        let noticeRows = need + wanted <= remaining ? wanted : min(wanted, max(min(wanted, 2), remaining - need))
        let sectionRows = max(0, remaining - noticeRows)

        if runNeed + queueNeed == 0 {
            out.append("no operations yet")
        } else {
            var runRows = min(runNeed, sectionRows)
            if runNeed + queueNeed > sectionRows && queueNeed > 0 {
                runRows = min(runNeed, max(sectionRows - queueNeed, (sectionRows + 1) / 2))
            }
            let queueRows = min(queueNeed, sectionRows - runRows)
            let longest = (runs + queues).map { TerminalText.width($0.name) + ($0.suspended ? 12 : 0) }.max() ?? 0
            let l = layout(longestName: longest)
            out += section("RUN", runs, rows: runRows, layout: l, noun: ("run", "runs"), busy: "unfinished")
            out += section("QUEUE", queues, rows: queueRows, layout: l, noun: ("queue", "queues"), busy: "with work")
        }
        out += bottom
        if noticeRows > 0 {
            out += m.notices.recent.suffix(noticeRows).map { WatchFormat.clock($0.at + m.wallOffset) + " " + $0.text }
        }
        return finish(out, budget)
    }

    /// At most `budget` lines, each cut to the width (and to ASCII punctuation without unicode).
    private func finish(_ lines: [String], _ budget: Int) -> [String] {
        lines.prefix(budget).map { line in
            var l = line
            if !unicode { l = l.replacingOccurrences(of: "…", with: "...").replacingOccurrences(of: "—", with: "-") }
            return TerminalText.fit(l, width, ellipsis: ellipsis)
        }
    }

    func title(_ m: WatchModel, at now: Double) -> String {
        let data = m.snapshotAt.map { "last data " + WatchFormat.clock($0 + m.wallOffset) } ?? "no data yet"
        switch m.link {
        case .up:
            return "opctl watch  \(m.endpoint)  for \(WatchFormat.duration(now - m.started, unknown: "?"))  "
                + WatchFormat.clock(now + m.wallOffset)
        case .down(let since):
            // The marker first: it survives any width.
            return "disconnected, retrying… (since \(Int(max(0, now - since))) s)  \(m.endpoint)  \(data)"
        case .silent(let since):
            return "no reply, retrying… (since \(Int(max(0, now - since))) s)  \(m.endpoint)  \(data)"
        }
    }

    /// Header and rows of one section in `rows` lines; past that, the ones with work left first and a
    /// summary line. One line: only the summary.
    func section(_ label: String, _ items: [WatchModel.Row], rows: Int, layout l: (columns: [Column], name: Int, bar: Int),
                 noun: (String, String), busy: String) -> [String] {
        guard rows > 0, !items.isEmpty else { return [] }
        let busyCount = items.filter { $0.unfinished > 0 }.count
        func summary(_ n: Int, more: Bool) -> String {
            let what = n == 1 ? noun.0 : noun.1
            return (more ? "… \(n) more \(what)" : "\(n) \(what)") + " (\(busyCount) \(busy))"
        }
        if rows == 1 { return [summary(items.count, more: false)] }
        var header = TerminalText.pad(label, l.name, ellipsis: ellipsis)
        if l.bar > 0 { header += " " + TerminalText.pad("PROGRESS", l.bar, ellipsis: ellipsis) }
        for c in l.columns { header += " " + TerminalText.pad(c.label, c.width, right: true, ellipsis: ellipsis) }
        if items.count <= rows - 1 { return [header] + items.map { row($0, l) } }
        // Those with work left first, each group in the coordinator's order.
        let shown = Array((items.filter { $0.unfinished > 0 } + items.filter { $0.unfinished == 0 }).prefix(rows - 2))
        let hiddenBusy = busyCount - shown.filter { $0.unfinished > 0 }.count
        let hidden = items.count - shown.count
        return [header] + shown.map { row($0, l) }
            + ["… \(hidden) more \(hidden == 1 ? noun.0 : noun.1) (\(hiddenBusy) \(busy))"]
    }

    func row(_ r: WatchModel.Row, _ l: (columns: [Column], name: Int, bar: Int)) -> String {
        let name = r.suspended ? TerminalText.fit(r.name, max(1, l.name - 12), ellipsis: ellipsis) + " (suspended)" : r.name
        var line = TerminalText.pad(name, l.name, ellipsis: ellipsis)
        if l.bar > 0 { line += " " + bar(r, l.bar) }
        for c in l.columns { line += " " + TerminalText.pad(c.value(r), c.width, right: true, ellipsis: ellipsis) }
        return line
    }

    /// "[#####-----]" in `width` columns: the finished share.
    func bar(_ r: WatchModel.Row, _ width: Int) -> String {
        let inner = max(0, width - 2)
        let filled = r.total == 0 ? 0 : min(inner, Int(Double(r.finished) / Double(r.total) * Double(inner)))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: inner - filled) + "]"
    }

    /// "workers: w1 a: 1/2  w2 b: 0/2 (+1 queued)" — running/slots, prefetched in brackets; as many as fit,
    /// then "+N more"; if not even one fits, totals.
    func workersLine(_ workers: [WireWorkerInfo]) -> String {
        guard !workers.isEmpty else { return "workers: none connected" }
        let items = workers.map { w in
            "\(w.workerID) \(w.name): \(w.running)/\(w.slots)" + (w.inFlight > w.running ? " (+\(w.inFlight - w.running) queued)" : "")
        }
        let all = "workers: " + items.joined(separator: "  ")
        if TerminalText.width(all) <= width { return all }
        var line = "workers:"
        for (i, item) in items.enumerated() {
            let more = "  +\(items.count - i - 1) more"
            if TerminalText.width(line + " " + item + more) > width {
                if i > 0 { return line + "  +\(items.count - i) more" }
                break
            }
            line += (i == 0 ? " " : "  ") + item
        }
        let running = workers.reduce(0) { $0 + Int($1.running) }, slots = workers.reduce(0) { $0 + Int($1.slots) }
        return "workers: \(workers.count) connected, \(running)/\(slots) slots running"
    }
}
