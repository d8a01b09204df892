import CZeroMQ

/// A failed libzmq call: the errno it reported, libzmq's text for it, and the call that failed.
///
/// "Would block" (EAGAIN) in non-blocking mode is never thrown: those calls return `nil`/`false`.
/// EINTR is retried inside the wrapper and never surfaces either.
public struct ZMQError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The errno value (e.g. `EINVAL`, `ETERM`, `EHOSTUNREACH`; libzmq's own codes such as `EFSM` too).
    public let errno: Int32
    /// `zmq_strerror(errno)`, or a wrapper-specific explanation.
    public let message: String
    /// What failed, e.g. `zmq_bind(tcp://nope:1)`.
    public let operation: String

    public init(errno: Int32, message: String, operation: String) {
        self.errno = errno
        self.message = message
        self.operation = operation
    }

    /// The error for `code` with libzmq's description.
    public init(errno code: Int32, operation: String) {
        self.init(errno: code, message: String(cString: zmq_strerror(code)), operation: operation)
    }

    /// The context was shut down or terminated: the owner should close its socket and stop.
    public var isTerminated: Bool { errno == ETERM }
    /// ROUTER with `routerMandatory`: the routing id names no connected peer.
    public var isHostUnreachable: Bool { errno == EHOSTUNREACH }
    /// The operation was used on a closed socket.
    public var isClosed: Bool { errno == ENOTSOCK }

    public var description: String { "\(operation): \(message) (errno \(errno))" }

    /// The error libzmq just reported on this thread.
    static func last(_ operation: @autoclosure () -> String) -> ZMQError {
        ZMQError(errno: zmq_errno(), operation: operation())
    }

    static func closed(_ operation: String) -> ZMQError {
        ZMQError(errno: ENOTSOCK, message: "socket is closed", operation: operation)
    }
}
