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

/// What a part wrote to stdout and stderr (protocol 1.5): the last bytes of each stream and how many
/// bytes came before them and were dropped. The shell handler records it; it travels with FINISHED
/// and the coordinator keeps it per attempt (`opctl logs`).
public struct PartOutput: Sendable, Hashable {
    public var stdout: [UInt8]
    public var stderr: [UInt8]
    public var stdoutDropped: Int
    public var stderrDropped: Int

    public init(stdout: [UInt8] = [], stderr: [UInt8] = [], stdoutDropped: Int = 0, stderrDropped: Int = 0) {
        self.stdout = stdout
        self.stderr = stderr
        self.stdoutDropped = stdoutDropped
        self.stderrDropped = stderrDropped
    }

    /// Nothing written at all.
    public var isEmpty: Bool { stdout.isEmpty && stderr.isEmpty && stdoutDropped == 0 && stderrDropped == 0 }
}

/// Everything the local queue reports, in order per part: `started` (only if a handler was
/// invoked), any number of `progress`, then exactly one `finished` for every submitted part.
public enum WorkerEvent: Sendable, Hashable {
    case started(PartKey)
    /// `fraction` in 0...1 when known.
    case progress(PartKey, fraction: Double?, message: String?)
    /// The output is what the handler recorded (`OperationContext.recordOutput`), nil for most parts.
    case finished(PartKey, OperationOutcome, PartOutput? = nil)

    public var key: PartKey {
        switch self {
        case .started(let key), .progress(let key, _, _), .finished(let key, _, _): key
        }
    }
}
