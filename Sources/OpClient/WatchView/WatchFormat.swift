import Foundation

/// Short, fixed-width texts for the live view's columns: every one fits its column at any value.
public enum WatchFormat {
    /// At most 4 columns: "9999", "12k", "123k", "1.2M", "12M", "123M", "1.2G".
    public static func count(_ n: UInt64) -> String {
        if n < 10_000 { return "\(n)" }
        for (limit, unit) in [(UInt64(1_000), "k"), (1_000_000, "M"), (1_000_000_000, "G"), (1_000_000_000_000, "T")] {
            let x = Double(n) / Double(limit)
            if x < 10 { return String(format: "%.1f", (x * 10).rounded(.down) / 10) + unit }
            if x < 1000 { return "\(Int(x))" + unit }
        }
        return "many"
    }

    /// At most 6 columns: "0.4/s", "12.5/s", "123/s", "1.2k/s", "12k/s"; nil is `unknown`.
    public static func rate(_ r: Double?, unknown: String) -> String {
        guard let r, r.isFinite, r >= 0 else { return unknown }
        if r < 10 { return String(format: "%.1f/s", r) }
        if r < 1000 { return "\(Int(r.rounded()))/s" }
        return count(UInt64(r.rounded())) + "/s"
    }

    /// At most 6 columns: "0.4s", "12.3s", "59s", "3m05s", "59m59s", "2h04m", "99h59m", ">99h".
    /// `tenths`: seconds under a minute with one decimal (elapsed), else whole (ETA).
    public static func duration(_ seconds: Double?, tenths: Bool = false, unknown: String) -> String {
        guard let seconds, seconds.isFinite else { return unknown }
        let s = max(0, seconds)
        if s < 60 {
            return tenths ? String(format: "%.1fs", (s * 10).rounded(.down) / 10) : "\(Int(s.rounded(.up)))s"
        }
        let whole = Int(s)
        if whole < 3600 { return "\(whole / 60)m" + String(format: "%02d", whole % 60) + "s" }
        if whole < 100 * 3600 { return "\(whole / 3600)h" + String(format: "%02d", whole % 3600 / 60) + "m" }
        return ">99h"
    }

    /// "12:04:31" in local time for `epochSeconds`.
    public static func clock(_ epochSeconds: Double) -> String {
        var t = time_t(epochSeconds.rounded(.down))
        var parts = tm()
        localtime_r(&t, &parts)
        return String(format: "%02d:%02d:%02d", parts.tm_hour, parts.tm_min, parts.tm_sec)
    }
}
