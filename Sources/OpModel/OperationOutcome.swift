/// How an operation (or one part of it) ended: what a handler returns, what the core records and
/// clients read. One type for every module (the core names it `Outcome`, a typealias).
public enum OperationOutcome: Sendable, Hashable {
    case succeeded([UInt8])
    case failed(String)
    case cancelled(String)

    public var isSucceeded: Bool { if case .succeeded = self { true } else { false } }
    public var isFailed: Bool { if case .failed = self { true } else { false } }
    public var isCancelled: Bool { if case .cancelled = self { true } else { false } }

    /// Result bytes when succeeded.
    public var result: [UInt8]? { if case .succeeded(let bytes) = self { bytes } else { nil } }
    /// Error text when failed, reason when cancelled.
    public var message: String? {
        switch self {
        case .succeeded: nil
        case .failed(let text), .cancelled(let text): text
        }
    }
}
