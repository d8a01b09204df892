import OpModel

// The shared vocabulary (OpModel) on the wire: the one mapping each way of QoS and dependency policy,
// for the coordinator, clients, workers and the Swift API alike.

extension OperationQoS {
    /// Nil for UNSPECIFIED ("the queue's") and unknown values.
    public init?(wire: WireQoS) {
        switch wire {
        case .userInteractive: self = .userInteractive
        case .userInitiated: self = .userInitiated
        case .default: self = .default
        case .utility: self = .utility
        case .background: self = .background
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }

    public var wire: WireQoS {
        switch self {
        case .userInteractive: .userInteractive
        case .userInitiated: .userInitiated
        case .default: .default
        case .utility: .utility
        case .background: .background
        }
    }
}

extension DependencyPolicy {
    /// `finished` for anything but `succeeded` (validation refuses unknown values before this).
    public init(wire: WireDependencyPolicy) {
        self = wire == .succeeded ? .succeeded : .finished
    }

    public var wire: WireDependencyPolicy {
        switch self {
        case .finished: .finished
        case .succeeded: .succeeded
        }
    }
}
