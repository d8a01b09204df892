/// Misuse and failures of the Swift API. Foundation's `OperationQueue` crashes on misuse; this throws.
/// The cases from `failed` on are how a typed operation's `value` ends when it does not return.
public enum RemoteOperationError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The operation is already in a queue (or was listed twice).
    case alreadyAdded(String, queue: String)
    /// A finished operation cannot run again.
    case alreadyFinished(String)
    /// Dependencies are sent with the operation, so they must be set before it is added.
    case dependencyAfterSubmit(String, dependency: String)
    case dependencyOnItself(String)
    /// The coordinator refused the batch; nothing of it was accepted (e.g. `cycle: a → b → a`).
    case rejected([String])
    /// No answer, or a request the coordinator refused.
    case connection(String)
    /// A setting out of range (checked before anything is changed or sent).
    case invalidValue(String)
    case closed

    // MARK: typed operations' outcomes

    /// The operation failed: the worker's error text (a retried one's says how many attempts, e.g.
    /// "failed after 3 attempts: …"), the last attempt (1-based; 0 if it never ran) and its worker.
    case failed(message: String, attempt: Int, worker: String?)
    /// Cancelled, by `cancel()`, `cancelAllOperations()`, another client, or a dependency policy.
    case cancelled(reason: String)
    /// The client could not decode the worker's output as `Output` (`path`: where in it, "" for the whole).
    case undecodableOutput(type: String, path: String, detail: String)
    /// The worker could not decode the client's input (its version of the type differs).
    case undecodableInput(type: String, path: String, detail: String)
    /// The client could not encode the input (thrown when the operation is added; nothing was sent).
    case unencodableInput(type: String, path: String, detail: String)
    /// The worker's encoded output was over the wire's result limit (that attempt failed).
    case outputTooLarge(type: String, size: Int, limit: Int)
    /// The worker threw the operation's `Failure` type, but the client could not decode it
    /// (the two sides' versions of it differ); `message` is the worker's text of it.
    case undecodableFailure(type: String, path: String, detail: String, message: String)

    public var description: String {
        func at(_ path: String) -> String { path.isEmpty ? "" : " at '\(path)'" }
        switch self {
        case .alreadyAdded(let op, let q): return "operation '\(op)' is already in queue '\(q)'; an operation can be added once"
        case .alreadyFinished(let op): return "operation '\(op)' has finished; a finished operation cannot be added again"
        case .dependencyAfterSubmit(let op, let d):
            return "cannot change dependency '\(d)' of '\(op)': it is already in a queue (set dependencies before adding it)"
        case .dependencyOnItself(let op): return "operation '\(op)' cannot depend on itself"
        case .rejected(let problems): return "the coordinator rejected the operations: " + problems.joined(separator: "; ")
        case .connection(let text), .invalidValue(let text): return text
        case .closed: return "the connection to the coordinator is closed"
        case .failed(let message, let attempt, let worker):
            return "failed (attempt \(attempt)\(worker.map { " on \($0)" } ?? "")): \(message)"
        case .cancelled(let reason): return "cancelled: \(reason)"
        case .undecodableOutput(let type, let path, let detail):
            return "the client cannot decode the output of \(type)\(at(path)): \(detail) (the worker's version of \(type) may differ from the client's)"
        case .undecodableInput(let type, let path, let detail):
            return "the worker cannot decode the input of \(type)\(at(path)): \(detail) (the worker's version of \(type) differs from the client's)"
        case .unencodableInput(let type, let path, let detail):
            return "cannot encode the input of \(type)\(at(path)): \(detail)"
        case .outputTooLarge(let type, let size, let limit):
            return "the output of \(type) is \(size) bytes, over the limit of \(limit) bytes"
        case .undecodableFailure(let type, let path, let detail, let message):
            return "the operation failed with a \(type) the client cannot decode\(at(path)): \(detail); its text: \(message)"
        }
    }
}
