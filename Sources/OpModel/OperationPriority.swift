/// `queuePriority` of an operation. Raw values are Foundation's `Operation.QueuePriority`
/// raw values; no other integers are valid.
public enum OperationPriority: Int, Sendable, Hashable, CaseIterable, Codable, Comparable {
    case veryLow = -8
    case low = -4
    case normal = 0
    case high = 4
    case veryHigh = 8

    /// The name used in graph files and on the command line.
    public var name: String {
        switch self {
        case .veryLow: "veryLow"
        case .low: "low"
        case .normal: "normal"
        case .high: "high"
        case .veryHigh: "veryHigh"
        }
    }

    /// Accepts a name (`high`) or one of the five raw values as text (`4`, `-8`).
    public init?(name: String) {
        if let match = Self.allCases.first(where: { $0.name == name }) {
            self = match
        } else if let raw = Int(name), let match = Self(rawValue: raw) {
            self = match
        } else {
            return nil
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Names for error messages and docs.
    public static let allNames = allCases.map(\.name)
}
