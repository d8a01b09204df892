import CZeroMQ
import Synchronization

/// Kinds of socket events libzmq reports (`zmq_socket_monitor`).
public struct MonitorEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public static let connected = MonitorEvents(rawValue: ZMQ_EVENT_CONNECTED)
    public static let connectDelayed = MonitorEvents(rawValue: ZMQ_EVENT_CONNECT_DELAYED)
    public static let connectRetried = MonitorEvents(rawValue: ZMQ_EVENT_CONNECT_RETRIED)
    public static let listening = MonitorEvents(rawValue: ZMQ_EVENT_LISTENING)
    public static let bindFailed = MonitorEvents(rawValue: ZMQ_EVENT_BIND_FAILED)
    public static let accepted = MonitorEvents(rawValue: ZMQ_EVENT_ACCEPTED)
    public static let acceptFailed = MonitorEvents(rawValue: ZMQ_EVENT_ACCEPT_FAILED)
    public static let closed = MonitorEvents(rawValue: ZMQ_EVENT_CLOSED)
    public static let closeFailed = MonitorEvents(rawValue: ZMQ_EVENT_CLOSE_FAILED)
    public static let disconnected = MonitorEvents(rawValue: ZMQ_EVENT_DISCONNECTED)
    public static let monitorStopped = MonitorEvents(rawValue: ZMQ_EVENT_MONITOR_STOPPED)
    public static let handshakeFailedNoDetail = MonitorEvents(rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    public static let handshakeSucceeded = MonitorEvents(rawValue: ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
    public static let handshakeFailedProtocol = MonitorEvents(rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
    public static let handshakeFailedAuth = MonitorEvents(rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
    public static let all = MonitorEvents(rawValue: ZMQ_EVENT_ALL)
}

/// One event from a `SocketMonitor`.
public struct MonitorEvent: Sendable, Equatable {
    /// Exactly one bit of `MonitorEvents`.
    public let kind: MonitorEvents
    /// Event-specific: a file descriptor, an errno, a retry interval or a handshake error code.
    public let value: UInt32
    /// The endpoint concerned, e.g. `tcp://127.0.0.1:5555`.
    public let endpoint: String
}

/// Receives connection events of one socket over an inproc PAIR socket.
///
/// Owned by the thread that owns the monitored socket. Its `socket` can be added to a `Poller`.
/// `close()` stops monitoring on the monitored socket first (see there); close it before or with that socket.
public final class SocketMonitor {
    private static let counter = Atomic<Int>(0)

    /// The PAIR socket events arrive on; poll it for `.readable`.
    public let socket: Socket
    /// The monitored socket: monitoring is stopped on it before our end closes (see `close`).
    private let target: Socket

    init(monitoring target: Socket, events: MonitorEvents) throws {
        let n = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        let address = "inproc://zmq-swift-monitor-\(n)"
        let h = try target.live("zmq_socket_monitor(\(address))")
        if zmq_socket_monitor(h, address, events.rawValue) != 0 { throw ZMQError.last("zmq_socket_monitor(\(address))") }
        socket = try Socket(target.context, type: .pair)
        try socket.connect(address)
        self.target = target
    }

    /// The next event; `nil` if none is ready (`.dontWait`) or the monitor was stopped.
    public func receive(flags: ReceiveFlags = []) throws -> MonitorEvent? {
        guard let head = try socket.receive(flags: flags) else { return nil }
        guard head.count == 6, socket.moreToReceive, let tail = try socket.receive() else {
            try socket.discardRemainingFrames()
            throw ZMQError(errno: EPROTO, message: "malformed monitor event (\(head.count) bytes)", operation: "zmq_socket_monitor")
        }
        let kind = UInt16(head[0]) | UInt16(head[1]) << 8  // libzmq writes host order; Linux x86/arm are little-endian
        let value = UInt32(head[2]) | UInt32(head[3]) << 8 | UInt32(head[4]) << 16 | UInt32(head[5]) << 24
        return MonitorEvent(kind: MonitorEvents(rawValue: Int32(kind)), value: value,
                            endpoint: String(decoding: tail, as: UTF8.self))
    }

    /// Stops monitoring, then closes the monitor's socket. In that order: libzmq sends events with a
    /// blocking send from its I/O thread, so an event (a disconnect as the monitored socket closes) sent
    /// towards a PAIR whose reader is gone blocks that thread for good — and with it every socket of the
    /// context (a worker's next session never connected).
    public func close() {
        try? target.stopMonitoring()
        socket.close()
    }
}

@available(*, unavailable, message: "a SocketMonitor belongs to the thread that owns the monitored socket")
extension SocketMonitor: Sendable {}

extension Socket {
    /// Starts reporting `events` of this socket; receive them from the returned monitor (same thread).
    public func monitor(_ events: MonitorEvents = [.connected, .accepted, .disconnected, .handshakeSucceeded]) throws -> SocketMonitor {
        try SocketMonitor(monitoring: self, events: events)
    }

    /// Stops every monitor of this socket.
    public func stopMonitoring() throws {
        let h = try live("zmq_socket_monitor(nil)")
        if zmq_socket_monitor(h, nil, 0) != 0 { throw ZMQError.last("zmq_socket_monitor(nil)") }
    }
}

/// Values of `.handshakeFailedProtocol` events (`ZMQ_PROTOCOL_ERROR_*`) that callers explain to people.
public enum ZMQProtocolError {
    /// The peer uses another security mechanism (e.g. CURVE against no keys).
    public static let mechanismMismatch = Int(ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
    /// A CURVE box did not open: wrong keys.
    public static let cryptographic = Int(ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC)
}
