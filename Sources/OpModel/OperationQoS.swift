/// `qualityOfService` of a queue or operation. A separate name from Foundation's
/// `QualityOfService` so that files importing both compile without qualification.
public enum OperationQoS: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    case userInteractive
    case userInitiated
    case `default`
    case utility
    case background

    /// Higher is more important (background 0 … userInteractive 4): the order of dispatch, and the
    /// code the core's lanes and the journal keep.
    @inlinable public var rank: Int {
        switch self {
        case .background: 0
        case .utility: 1
        case .default: 2
        case .userInitiated: 3
        case .userInteractive: 4
        }
    }

    /// The QoS of `rank`; nil outside 0…4.
    @inlinable public init?(rank: Int) {
        switch rank {
        case 0: self = .background
        case 1: self = .utility
        case 2: self = .default
        case 3: self = .userInitiated
        case 4: self = .userInteractive
        default: return nil
        }
    }

    /// Foundation's `QualityOfService` raw value, for code that bridges to it.
    public var foundationRawValue: Int {
        switch self {
        case .userInteractive: 0x21
        case .userInitiated: 0x19
        case .default: -1
        case .utility: 0x11
        case .background: 0x09
        }
    }

    /// The nice level a worker gives a child process of this QoS. A worker cannot raise
    /// priority above its own without privilege, so the scale only lowers: interactive work
    /// runs at the worker's level, background work at the lowest (19).
    public var niceLevel: Int32 {
        switch self {
        case .userInteractive: 0
        case .userInitiated: 2
        case .default: 5
        case .utility: 10
        case .background: 19
        }
    }

    public init?(name: String) { self.init(rawValue: name) }
    public var name: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }

    public static let allNames = allCases.map(\.rawValue)
}
