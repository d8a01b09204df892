import CZeroMQ
import Synchronization

/// libzmq socket types. ROUTER (coordinator) and DEALER (workers, clients) are the ones the project uses.
public enum SocketType: Sendable, CaseIterable {
    case pair, pub, sub, req, rep, dealer, router, pull, push, xpub, xsub

    var raw: Int32 {
        switch self {
        case .pair: ZMQ_PAIR
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pull: ZMQ_PULL
        case .push: ZMQ_PUSH
        case .xpub: ZMQ_XPUB
        case .xsub: ZMQ_XSUB
        }
    }
}

/// One libzmq socket.
///
/// **Ownership.** libzmq sockets are not thread-safe, so `Socket` is deliberately *not* `Sendable`: the
/// compiler keeps it inside the isolation domain (thread) that created it. Create sockets on the thread
/// that uses them (the `Context` is `Sendable`), or move one exactly once with `SocketHandoff`.
///
/// **Closing.** `close()` closes it now (idempotent); `deinit` closes it if you did not. After closing,
/// every call throws a `ZMQError` with `isClosed`. Linger is set to 0 at creation, so closing drops
/// unsent messages instead of delaying context termination; set `.linger` if you want otherwise.
///
/// **Would block.** With `.dontWait` (or a send/receive timeout) the calls return `false`/`nil` instead
/// of blocking; that is never thrown.
public final class Socket {
    /// The context this socket belongs to; retained so the context outlives its sockets.
    public let context: Context
    public let type: SocketType
    private(set) var handle: UnsafeMutableRawPointer?
    /// A reusable message for `receive()`, so that receiving allocates only the returned array.
    let scratch: UnsafeMutablePointer<zmq_msg_t>
    /// Whether the last frame received has more frames after it (ZMQ_RCVMORE of the last receive).
    public internal(set) var moreToReceive = false

    public init(_ context: Context, type: SocketType) throws {
        self.context = context
        self.type = type
        let s = try context.socketOpened { zmq_socket(context.handle, type.raw) }
        handle = s
        scratch = .allocate(capacity: 1)
        zmq_msg_init(scratch)
        var zero: Int32 = 0
        zmq_setsockopt(s, ZMQ_LINGER, &zero, MemoryLayout<Int32>.size)
    }

    /// Whether `close()` has run.
    public var isClosed: Bool { handle == nil }

    /// Closes the socket now. Idempotent. Messages not yet sent are kept for `.linger` ms (0 by default).
    public func close() {
        guard let h = handle else { return }
        handle = nil
        zmq_close(h)
        context.socketClosed()
    }

    deinit {
        close()
        zmq_msg_close(scratch)
        scratch.deallocate()
    }

    @inline(__always)
    func live(_ operation: @autoclosure () -> String) throws -> UnsafeMutableRawPointer {
        guard let h = handle else { throw ZMQError.closed(operation()) }
        return h
    }

    // MARK: endpoints

    /// Binds to `endpoint`, e.g. `tcp://127.0.0.1:*` (read the chosen port with `lastEndpoint()`),
    /// `tcp://*:5555`, `inproc://name`, `ipc:///tmp/x`.
    public func bind(_ endpoint: String) throws {
        let h = try live("zmq_bind(\(endpoint))")
        try retryingEINTR("zmq_bind(\(endpoint))") { zmq_bind(h, endpoint) }
    }

    /// Connects to `endpoint`. Returns at once; the connection (and reconnects) happen in the background.
    public func connect(_ endpoint: String) throws {
        let h = try live("zmq_connect(\(endpoint))")
        try retryingEINTR("zmq_connect(\(endpoint))") { zmq_connect(h, endpoint) }
    }

    /// Stops listening on an endpoint given to `bind` (use the resolved `lastEndpoint()` for wildcards).
    public func unbind(_ endpoint: String) throws {
        let h = try live("zmq_unbind(\(endpoint))")
        try retryingEINTR("zmq_unbind(\(endpoint))") { zmq_unbind(h, endpoint) }
    }

    /// Drops the connection made by `connect(endpoint)`.
    public func disconnect(_ endpoint: String) throws {
        let h = try live("zmq_disconnect(\(endpoint))")
        try retryingEINTR("zmq_disconnect(\(endpoint))") { zmq_disconnect(h, endpoint) }
    }

    /// The endpoint of the last `bind`/`connect`, with wildcards resolved (`tcp://127.0.0.1:41234`).
    public func lastEndpoint() throws -> String { try get(.lastEndpoint) }

    /// The TCP port of the last `bind`, e.g. after binding `tcp://127.0.0.1:*`; nil for non-tcp endpoints.
    public func boundPort() throws -> Int? {
        let endpoint = try lastEndpoint()
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return nil }
        return Int(endpoint[endpoint.index(after: colon)...])
    }

    private func retryingEINTR(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws {
        while call() != 0 {
            let e = zmq_errno()
            if e != EINTR { throw ZMQError(errno: e, operation: operation()) }
        }
    }
}

@available(*, unavailable, message: "a Socket belongs to one thread; move it with SocketHandoff")
extension Socket: Sendable {}

/// Moves a socket to another thread exactly once.
///
/// `init` takes the socket as `sending`, so the compiler rejects any later use by the giver; the receiving
/// thread calls `take()` (which returns the socket once, then nil). This is the only sanctioned way for a
/// socket to change threads.
public final class SocketHandoff: Sendable {
    private let slot: Mutex<Socket?>

    public init(_ socket: sending Socket) {
        slot = Mutex(socket)
    }

    /// The socket, the first time; nil afterwards.
    public func take() -> sending Socket? {
        slot.withLock { value -> sending Socket? in
            let s = value
            value = nil
            return s
        }
    }
}
