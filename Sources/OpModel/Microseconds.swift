/// Seconds (what users write) to whole microseconds (what the wire, the core and the journal use) and
/// back: the one conversion for every duration of a spec.
public enum Microseconds {
    /// `seconds` to the nearest microsecond, within Int64's range. Values a validation must still be
    /// able to name keep their own codes: +∞ is `Int64.max`, −∞ `Int64.min` and NaN `Int64.min + 1`,
    /// and `seconds(_:)` gives them back.
    public static func from(seconds: Double) -> Int64 {
        if seconds.isNaN { return notANumber }
        if seconds == .infinity { return .max }
        if seconds == -.infinity { return .min }
        let micros = (seconds * 1_000_000).rounded()
        // 2^63 is the first Double beyond Int64.max; the finite extremes stay off the codes above.
        if micros >= 9_223_372_036_854_775_808 { return .max - 1 }
        if micros <= -9_223_372_036_854_775_808 { return notANumber + 1 }
        return max(Int64(micros), notANumber + 1)
    }

    /// Microseconds as seconds (the codes of `from(seconds:)` as ±∞ and NaN).
    public static func seconds(_ micros: Int64) -> Double {
        switch micros {
        case .max: .infinity
        case .min: -.infinity
        case notANumber: .nan
        default: Double(micros) / 1_000_000
        }
    }

    static let notANumber = Int64.min + 1
}
