/// `--retain`'s text: a non-negative number with a unit (h, m, s, ms), e.g. "24h", "1.5h", "500ms".
enum RetentionPeriod {
    static func micros(_ text: String) -> Int64? {
        let units: [(String, Double)] = [("ms", 1_000), ("h", 3_600_000_000), ("m", 60_000_000), ("s", 1_000_000)]
        for (unit, scale) in units where text.hasSuffix(unit) {
            guard let v = Double(text.dropLast(unit.count)), v >= 0, v.isFinite, v * scale < Double(Int64.max / 2) else { return nil }
            return Int64(v * scale)
        }
        return nil
    }
}
