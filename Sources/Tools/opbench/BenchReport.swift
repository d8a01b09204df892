import Foundation

/// One measured workload. Every suite prints its results through `BenchReport`
/// so `scripts/bench` output looks the same everywhere: a table for people,
/// and with `--json` one JSON object per workload per line for scripts.
struct BenchResult {
    var suite: String
    var name: String
    /// Extra figures, printed in insertion order (e.g. "ops", "ops_per_s", "p50_us").
    var fields: [(String, Double)]
    /// Free text shown in the table's last column (e.g. "target ≥ 1M ops/s: met").
    var note: String = ""
    /// Settings the figures were measured with (e.g. "journal"), printed as JSON booleans.
    var flags: [(String, Bool)] = []

    init(suite: String, name: String, fields: [(String, Double)], note: String = "") {
        self.suite = suite
        self.name = name
        self.fields = fields
        self.note = note
    }

    subscript(_ key: String) -> Double? { fields.first { $0.0 == key }?.1 }
}

enum BenchReport {
    /// Prints the results as an aligned table, or as JSON lines when `json` is set.
    static func emit(_ results: [BenchResult], json: Bool) {
        if json {
            for r in results {
                var parts = ["\"suite\":\"\(r.suite)\"", "\"name\":\"\(r.name)\""]
                for (k, v) in r.flags { parts.append("\"\(k)\":\(v)") }
                for (k, v) in r.fields { parts.append("\"\(k)\":\(format(v, json: true))") }
                if !r.note.isEmpty { parts.append("\"note\":\"\(r.note.replacingOccurrences(of: "\"", with: "'"))\"") }
                print("{" + parts.joined(separator: ",") + "}")
            }
            return
        }
        for r in results {
            let cells = (r.flags.map { "\($0.0)=\($0.1 ? "on" : "off")" } + r.fields.map { "\($0.0)=\(format($0.1, json: false))" })
                .joined(separator: "  ")
            print("\(pad(r.suite, 6)) \(pad(r.name, 22)) \(cells)\(r.note.isEmpty ? "" : "  [\(r.note)]")")
        }
    }

    private static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? s : s + String(repeating: " ", count: n - s.count)
    }

    private static func format(_ v: Double, json: Bool) -> String {
        if v.isNaN || v.isInfinite { return json ? "null" : "n/a" }
        if v == v.rounded() && abs(v) < 1e15 { return String(Int64(v)) }
        return String(format: "%.3f", v)
    }
}

/// Process-wide measurements used by the suites.
enum BenchProbe {
    /// Resident set size in bytes, from /proc/self/statm (Linux).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Monotonic clock in nanoseconds.
    static func nowNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Value at quantile q (0...1) of an unsorted sample; sorts a copy.
    static func quantile(_ xs: [Double], _ q: Double) -> Double {
        guard !xs.isEmpty else { return .nan }
        let s = xs.sorted()
        return s[min(s.count - 1, Int((Double(s.count - 1) * q).rounded()))]
    }
}
