import Foundation

/// `opcoord --retain-bytes`'s text: bytes ("1048576"), with a binary unit ("256MiB", "4GiB", "512KiB"; K, M,
/// G alone mean the same), or a share of the machine's memory ("25%", the default).
public enum ByteSize {
    public static let defaultRetain = "25%"

    /// nil when the text is none of those, or the amount is not positive.
    public static func bytes(_ text: String, physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) -> Int? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.hasSuffix("%") {
            guard let p = Double(t.dropLast()), p > 0, p <= 100 else { return nil }
            return Int(min(Double(Int.max / 2), Double(physicalMemory) * p / 100))
        }
        let k = 1024.0
        let units: [(String, Double)] = [("KiB", k), ("MiB", k * k), ("GiB", k * k * k), ("TiB", k * k * k * k),
                                         ("K", k), ("M", k * k), ("G", k * k * k), ("T", k * k * k * k), ("B", 1)]
        var number = Substring(t), scale = 1.0
        for (unit, s) in units where t.hasSuffix(unit) {
            number = t.dropLast(unit.count)
            scale = s
            break
        }
        guard let v = Double(number.trimmingCharacters(in: .whitespaces)), v.isFinite, v > 0, v * scale < Double(Int.max / 2) else { return nil }
        let n = Int(v * scale)
        return n > 0 ? n : nil
    }
}
