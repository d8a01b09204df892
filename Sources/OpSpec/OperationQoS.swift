/// `qualityOfService` of a queue or operation. A separate name from Foundation's
/// `QualityOfService` so that files importing both compile without qualification.
public enum OperationQoS: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    case userInteractive
    case userInitiated
    case `default`
    case utility
    case background

    /// Higher is more important (background 0 … userInteractive 4).
    public var rank: Int {
        switch self {
        case .background: 0
        case .utility: 1
        case .default: 2
        case .userInitiated: 3
        case .userInteractive: 4
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

/// When a dependent may run: after its dependencies *finish* (OperationQueue's rule, the
/// default) or only after they all *succeed* (otherwise it is cancelled).
public enum DependencyPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    case finished
    case succeeded

    public static let allNames = allCases.map(\.rawValue)
}
