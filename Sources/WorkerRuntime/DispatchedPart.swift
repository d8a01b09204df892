import OpSpec

/// Identifies one run of one part of an operation on a worker. A retried or re-dispatched
/// operation keeps its id and part but gets a new attempt, so stale reports can be fenced.
public struct PartKey: Sendable, Hashable, CustomStringConvertible {
    public var opID: String
    /// 0-based part index (BlockOperation-style groups have several).
    public var part: Int
    /// 1-based attempt number.
    public var attempt: Int

    public init(opID: String, part: Int = 0, attempt: Int = 1) {
        self.opID = opID
        self.part = part
        self.attempt = attempt
    }

    public var description: String { "\(opID)#\(part)@\(attempt)" }
}

/// What the coordinator sends a worker to run: the dispatch record of the shared vocabulary.
/// Dependencies are already resolved, so a part is ready to run as soon as a slot is free.
public struct DispatchedPart: Sendable, Hashable {
    public var key: PartKey
    /// Display name (defaults to the op id).
    public var name: String
    public var kind: String
    public var payload: [UInt8]
    /// Results of the dependencies, in the operation's `after` order: (dependency id, result bytes).
    public var inputs: [Input]
    public var priority: OperationPriority
    public var qos: OperationQoS

    public struct Input: Sendable, Hashable {
        public var id: String
        public var result: [UInt8]
        public init(id: String, result: [UInt8]) {
            self.id = id
            self.result = result
        }
    }

    public init(
        key: PartKey,
        name: String? = nil,
        kind: String,
        payload: [UInt8] = [],
        inputs: [Input] = [],
        priority: OperationPriority = .normal,
        qos: OperationQoS = .default
    ) {
        self.key = key
        self.name = name ?? key.opID
        self.kind = kind
        self.payload = payload
        self.inputs = inputs
        self.priority = priority
        self.qos = qos
    }

    public var opID: String { key.opID }
}

/// Everything the local queue reports, in order per part: `started` (only if a handler was
/// invoked), any number of `progress`, then exactly one `finished` for every submitted part.
public enum WorkerEvent: Sendable, Hashable {
    case started(PartKey)
    /// `fraction` in 0...1 when known.
    case progress(PartKey, fraction: Double?, message: String?)
    case finished(PartKey, OperationOutcome)

    public var key: PartKey {
        switch self {
        case .started(let key), .progress(let key, _, _), .finished(let key, _): key
        }
    }
}
