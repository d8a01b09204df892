import CZeroMQ
import Glibc
import ThreadMonitor

/// Readiness bits for `Poller`.
public struct PollEvents: OptionSet, Sendable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }
    /// A message can be received without blocking (for an fd: it is readable).
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// A message can be sent without blocking.
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// Error on a plain file descriptor (always reported, need not be requested).
    public static let error = PollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// `zmq_poll` over sockets and plain file descriptors (e.g. a `Waker`), with a timeout.
///
/// Items are addressed by the index `add` returns, stable for the poller's life. The poller retains
/// what it polls; a socket closed while registered makes `poll` throw (`isClosed`) instead of touching
/// freed memory. Not `Sendable`: it belongs to the thread that owns its sockets.
/// Readiness of ZeroMQ sockets is level-triggered here (zmq_poll consults ZMQ_EVENTS), so receiving
/// one message per wake-up is correct, if slower than draining with `.dontWait`.
public final class Poller {
    private var items: [zmq_pollitem_t] = []
    private var sockets: [Socket?] = []
    private var wakers: [Waker?] = []

    public init() {}

    /// Number of registered items.
    public var count: Int { items.count }

    @discardableResult
    public func add(_ socket: Socket, events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: socket.handle, fd: -1, events: events.rawValue, revents: 0))
        sockets.append(socket)
        wakers.append(nil)
        return items.count - 1
    }

    /// A plain file descriptor. The caller keeps it open while it is registered.
    @discardableResult
    public func add(fileDescriptor fd: Int32, events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fd, events: events.rawValue, revents: 0))
        sockets.append(nil)
        wakers.append(nil)
        return items.count - 1
    }

    /// A waker, polled for readability; call `waker.drain()` when it is ready.
    @discardableResult
    public func add(_ waker: Waker) -> Int {
        let i = add(fileDescriptor: waker.fileDescriptor, events: .readable)
        wakers[i] = waker
        return i
    }

    /// Puts `socket` in place of the socket at `index` (e.g. after closing and recreating a DEALER to
    /// reconnect), keeping every index stable.
    public func replaceSocket(at index: Int, with socket: Socket) throws {
        guard sockets.indices.contains(index), sockets[index] != nil else {
            throw ZMQError(errno: EINVAL, message: "poll item \(index) is not a socket", operation: "Poller.replaceSocket")
        }
        sockets[index] = socket
        items[index].socket = socket.handle
    }

    /// Changes what item `index` is polled for (e.g. add `.writable` while output is pending; `[]` to mute).
    public func setEvents(_ events: PollEvents, at index: Int) {
        items[index].events = events.rawValue
    }

    /// Waits until at least one item is ready or `timeout` passes (`nil` = no limit, `.zero` = just check).
    /// Returns the number of ready items (0 on timeout). Sub-millisecond timeouts round up to 1 ms.
    /// Throws `isTerminated` when the context is shut down, `isClosed` if a registered socket was closed.
    @discardableResult
    public func poll(timeout: Duration?) throws -> Int {
        for (i, s) in sockets.enumerated() {
            guard let s else { continue }
            guard let h = s.handle else { throw ZMQError.closed("zmq_poll(item \(i))") }
            items[i].socket = h
        }
        let deadline: Int64? = timeout.map { Int64(monotonicNanos()) &+ max(0, $0.nanoseconds) }
        while true {
            var ms: Int = -1
            if let deadline {
                let left = deadline - Int64(monotonicNanos())
                ms = left <= 0 ? 0 : Int((left + 999_999) / 1_000_000)
            }
            let n = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32($0.count), ms) }
            if n >= 0 { return Int(n) }
            let e = zmq_errno()
            if e != EINTR { throw ZMQError(errno: e, operation: "zmq_poll") }
        }
    }

    /// What item `index` was ready for in the last `poll`.
    public func readyEvents(at index: Int) -> PollEvents { PollEvents(rawValue: items[index].revents) }

    public func isReadable(_ index: Int) -> Bool { readyEvents(at: index).contains(.readable) }
    public func isWritable(_ index: Int) -> Bool { readyEvents(at: index).contains(.writable) }
}

@available(*, unavailable, message: "a Poller belongs to the thread that owns its sockets")
extension Poller: Sendable {}
