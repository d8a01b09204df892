import Foundation
import OpModel
import Yams

// A graph file's fair-share fields (A11, docs/GRAPHS.md): `share:` and `concurrencyKey:` on an operation;
// `share:`, `weights:`, `keyLimit:`, `keyStrategy:`, `rate:`, `burst:`, `keyRate:`, `keyBurst:` and `ageing:` on a queue. Ranges are checked
// here, at the node, so each problem names its line.

/// A rate as written: `100/s`, `30/m`, `500/h` (a bare number is per second).
public enum RateText {
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    /// Per second, or why the text is no rate.
    public static func perSecond(_ text: String) -> Result<Double, Problem> {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let unit = parts.count == 2 ? parts[1] : "s"
        guard parts.count <= 2, let n = Double(parts[0]), n.isFinite else {
            return .failure(Problem("expected a rate like 100/s, 30/m or 500/h, got \"\(text)\""))
        }
        let seconds: Double
        switch unit {
        case "s", "sec", "second": seconds = 1
        case "m", "min", "minute": seconds = 60
        case "h", "hour": seconds = 3600
        default: return .failure(Problem("unknown rate unit \"/\(unit)\" in \"\(text)\" (use /s, /m or /h)"))
        }
        let rate = n / seconds
        guard rate > 0, rate <= 1_000_000 else { return .failure(Problem("must be more than 0 and at most 1000000/s, got \"\(text)\"")) }
        return .success(rate)
    }

    /// `perSecond` written back the shortest way: `100/s`, `30/m`, `0.5/h`.
    public static func text(_ perSecond: Double) -> String {
        for (unit, seconds) in [("s", 1.0), ("m", 60.0), ("h", 3600.0)] {
            let n = perSecond * seconds
            if n >= 1 || unit == "h" {
                return (n.rounded() == n ? String(Int(n)) : String(format: "%g", n)) + "/" + unit
            }
        }
        return "\(perSecond)/s"
    }
}

/// An ageing period as written: `500ms`, `30s`, `5m`, `1h` (a bare number is seconds); 1ms…24h.
public enum AgeingText {
    /// Microseconds, or why the text is no ageing period.
    public static func micros(_ text: String) -> Result<Int64, RateText.Problem> {
        let t = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 1_000), ("s", 1_000_000), ("m", 60_000_000), ("h", 3_600_000_000)]
        let (number, scale) = units.first { t.hasSuffix($0.0) }.map { (String(t.dropLast($0.0.count)), $0.1) } ?? (t, 1_000_000)
        guard let n = Double(number.trimmingCharacters(in: .whitespaces)), n.isFinite else {
            return .failure(RateText.Problem("expected a period like 500ms, 30s, 5m or 1h, got \"\(text)\""))
        }
        let micros = (n * scale).rounded()
        let range = QueueFairness.ageingRange
        guard micros >= Double(range.lowerBound), micros <= Double(range.upperBound) else {
            return .failure(RateText.Problem("must be 1ms to 24h, got \"\(text)\""))
        }
        return .success(Int64(micros))
    }

    /// `micros` written back in the largest unit that keeps it whole: `30s`, `1500ms`, `2h`.
    public static func text(_ micros: Int64) -> String {
        for (unit, scale) in [("h", Int64(3_600_000_000)), ("m", 60_000_000), ("s", 1_000_000), ("ms", 1_000)] where micros % scale == 0 {
            return "\(micros / scale)\(unit)"
        }
        return String(format: "%gms", Double(micros) / 1_000)
    }
}

extension GraphFileReader {
    /// A share key or concurrency key: a non-empty string of at most 1,024 UTF-8 bytes (the wire's id limit).
    mutating func readKey(_ node: Node, _ location: String, _ field: String) -> String? {
        guard let s = readString(node, location, field) else { return nil }
        if s.isEmpty { problem(location, field, node, "must not be empty (leave \(field) out for none)"); return nil }
        if s.utf8.count > 1024 { problem(location, field, node, "is \(s.utf8.count) bytes long, at most 1024 allowed"); return nil }
        return s
    }

    /// A share key or concurrency key with its template placeholders expanded (KeyTemplate), checked
    /// again as a key; nil (and a problem naming the line) when it cannot be.
    mutating func expandKey(_ text: String, op: OperationSpec, payload: Node?, env: [String: String]?,
                            _ location: String, _ field: String, _ node: Node) -> String? {
        guard KeyTemplate.isTemplate(text) else { return text }
        switch KeyTemplate.expand(text, id: op.id, payload: payload, env: env) {
        case .failure(let p):
            problem(location, field, node, p.description)
            return nil
        case .success(let key):
            if key.isEmpty { problem(location, field, node, "\"\(text)\" expands to an empty key"); return nil }
            if key.utf8.count > 1024 { problem(location, field, node, "\"\(text)\" expands to \(key.utf8.count) bytes, at most 1024 allowed"); return nil }
            return key
        }
    }

    /// One of a queue's fair-share fields into `fairness` (made from the default at the first); false when
    /// `key` is none of them.
    static let fairnessFields: Set<String> = ["share", "weights", "keyLimit", "keyStrategy", "rate", "burst", "keyRate", "keyBurst", "ageing"]

    mutating func readFairnessField(_ key: String, _ value: Node, _ location: String, into fairness: inout QueueFairness?) -> Bool {
        guard Self.fairnessFields.contains(key) else { return false }
        var f = fairness ?? .default
        defer { fairness = f }
        switch key {
        case "share":
            guard let text = readString(value, location, key) else { return true }
            if let mode = QueueFairness.ShareMode(rawValue: text) { f.share = mode } else {
                problem(location, key, value, "unknown share mode \"\(text)\" (known: submitter, run, key, fifo)")
            }
        case "weights":
            guard let mapping = value.mapping else {
                problem(location, key, value, "expected a mapping of share keys to weights (weights: {team-a: 3}), got \(Self.describe(value))")
                return true
            }
            for (k, v) in mapping {
                guard let share = readKey(k, location, key) else { continue }
                guard let w = readInt(v, location, "\(key).\(share)") else { continue }
                if w < 1 || w > QueueFairness.maxWeight {
                    problem(location, "\(key).\(share)", v, "must be 1 to \(QueueFairness.maxWeight), got \(w)")
                } else {
                    f.weights[share] = w
                }
            }
        case "keyLimit":
            guard let n = readInt(value, location, key) else { return true }
            if n < 0 || n > Int(Int32.max) { problem(location, key, value, "must be 0 (no limit) or more, got \(n)") } else { f.keyLimit = n }
        case "keyStrategy":
            guard let text = readString(value, location, key) else { return true }
            if let s = QueueFairness.KeyStrategy(rawValue: text) { f.keyStrategy = s } else {
                problem(location, key, value, "unknown key strategy \"\(text)\" (known: wait, cancel-newest, cancel-in-progress)")
            }
        case "rate":
            let text = value.tagName == .int || value.tagName == .float ? value.scalar?.string : readString(value, location, key)
            guard let text else { return true }
            switch RateText.perSecond(text) {
            case .success(let r): f.rate = RateLimit(perSecond: r, burst: f.rate?.burst ?? 1)
            case .failure(let p): problem(location, key, value, p.description)
            }
        case "burst":
            guard let n = readInt(value, location, key) else { return true }
            if n < 1 || n > 1_000_000 { problem(location, key, value, "must be 1 to 1000000, got \(n)"); return true }
            // Kept even before `rate:` is read (the two may come in any order); a burst without a rate is
            // reported by `checkBurst`.
            f.rate = RateLimit(perSecond: f.rate?.perSecond ?? 0, burst: n)
        case "keyRate":
            let text = value.tagName == .int || value.tagName == .float ? value.scalar?.string : readString(value, location, key)
            guard let text else { return true }
            switch RateText.perSecond(text) {
            case .success(let r): f.keyRate = RateLimit(perSecond: r, burst: f.keyRate?.burst ?? 1)
            case .failure(let p): problem(location, key, value, p.description)
            }
        case "keyBurst":
            guard let n = readInt(value, location, key) else { return true }
            if n < 1 || n > 1_000_000 { problem(location, key, value, "must be 1 to 1000000, got \(n)"); return true }
            // As `burst`: a key burst without a key rate is reported by `checkBurst`.
            f.keyRate = RateLimit(perSecond: f.keyRate?.perSecond ?? 0, burst: n)
        case "ageing":
            let text = value.tagName == .int || value.tagName == .float ? value.scalar?.string : readString(value, location, key)
            guard let text else { return true }
            switch AgeingText.micros(text) {
            case .success(let a): f.ageingMicros = a
            case .failure(let p): problem(location, key, value, p.description)
            }
        default:
            break
        }
        return true
    }

    /// `burst:` with no `rate:`, `keyBurst:` with no `keyRate:`.
    mutating func checkBurst(_ fairness: QueueFairness?, _ mapping: Node.Mapping, _ location: String) {
        if let rate = fairness?.rate, rate.perSecond == 0,
           let node = mapping.first(where: { $0.key.scalar?.string == "burst" })?.value {
            problem(location, "burst", node, "burst needs a rate: (rate: 100/s, burst: \(rate.burst))")
        }
        if let rate = fairness?.keyRate, rate.perSecond == 0,
           let node = mapping.first(where: { $0.key.scalar?.string == "keyBurst" })?.value {
            problem(location, "keyBurst", node, "keyBurst needs a keyRate: (keyRate: 10/s, keyBurst: \(rate.burst))")
        }
    }
}
