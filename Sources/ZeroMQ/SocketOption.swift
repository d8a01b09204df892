import CZeroMQ

/// A value type libzmq socket options carry: integers, booleans (as int), binary blobs and strings.
public protocol SocketOptionValue: Sendable {
    /// Bytes to reserve when reading the option.
    static var readCapacity: Int { get }
    init(optionBytes: UnsafeRawBufferPointer)
    func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Int32: SocketOptionValue {
    public static var readCapacity: Int { 4 }
    public init(optionBytes b: UnsafeRawBufferPointer) { self = b.count >= 4 ? b.loadUnaligned(as: Int32.self) : 0 }
    public func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: self, body)
    }
}

extension Int64: SocketOptionValue {
    public static var readCapacity: Int { 8 }
    public init(optionBytes b: UnsafeRawBufferPointer) { self = b.count >= 8 ? b.loadUnaligned(as: Int64.self) : 0 }
    public func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: self, body)
    }
}

extension UInt64: SocketOptionValue {
    public static var readCapacity: Int { 8 }
    public init(optionBytes b: UnsafeRawBufferPointer) { self = b.count >= 8 ? b.loadUnaligned(as: UInt64.self) : 0 }
    public func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: self, body)
    }
}

extension Bool: SocketOptionValue {
    public static var readCapacity: Int { 4 }
    public init(optionBytes b: UnsafeRawBufferPointer) { self = Int32(optionBytes: b) != 0 }
    public func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Int32(self ? 1 : 0).withOptionBytes(body)
    }
}

extension Array: SocketOptionValue where Element == UInt8 {
    public static var readCapacity: Int { 256 }
    public init(optionBytes b: UnsafeRawBufferPointer) { self = [UInt8](b) }
    public func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}

extension String: SocketOptionValue {
    public static var readCapacity: Int { 1024 }
    /// libzmq returns strings NUL-terminated; the terminator is dropped.
    public init(optionBytes b: UnsafeRawBufferPointer) {
        let end = b.firstIndex(of: 0) ?? b.count
        self = String(decoding: b[..<end], as: UTF8.self)
    }
    /// Written without a terminator (libzmq takes the length).
    public func withOptionBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var copy = self
        return try copy.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

/// A typed libzmq socket option: `try socket.set(.linger, 0)`, `try socket.get(.lastEndpoint)`.
/// Times are milliseconds as in libzmq. Use `SocketOption<T>(code)` for options not listed here.
public struct SocketOption<Value: SocketOptionValue>: Sendable {
    public let code: Int32
    public let name: String
    public init(_ code: Int32, name: String? = nil) {
        self.code = code
        self.name = name ?? "option \(code)"
    }
}

extension SocketOption where Value == Int32 {
    /// ms unsent messages are kept after `close()`; 0 drops them (the wrapper's default). -1 (forever) is refused.
    public static var linger: Self { .init(ZMQ_LINGER, name: "ZMQ_LINGER") }
    /// Messages queued per peer before sends block / ROUTER drops (0 = unlimited). libzmq default 1000.
    public static var sendHighWaterMark: Self { .init(ZMQ_SNDHWM, name: "ZMQ_SNDHWM") }
    public static var receiveHighWaterMark: Self { .init(ZMQ_RCVHWM, name: "ZMQ_RCVHWM") }
    /// ms a blocking send/receive waits before returning "would block" (-1 = forever, the default).
    public static var sendTimeout: Self { .init(ZMQ_SNDTIMEO, name: "ZMQ_SNDTIMEO") }
    public static var receiveTimeout: Self { .init(ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO") }
    /// ZMTP heartbeat: ms between PINGs (0 = off, the default).
    public static var heartbeatInterval: Self { .init(ZMQ_HEARTBEAT_IVL, name: "ZMQ_HEARTBEAT_IVL") }
    /// ZMTP heartbeat: ms without any traffic after a PING before the connection is closed.
    public static var heartbeatTimeout: Self { .init(ZMQ_HEARTBEAT_TIMEOUT, name: "ZMQ_HEARTBEAT_TIMEOUT") }
    /// ZMTP heartbeat: ms the *peer* should wait for traffic before timing us out (sent in PINGs, 100 ms units).
    public static var heartbeatTTL: Self { .init(ZMQ_HEARTBEAT_TTL, name: "ZMQ_HEARTBEAT_TTL") }
    /// ms before reconnecting a dropped connection (default 100; -1 = no reconnect).
    public static var reconnectInterval: Self { .init(ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL") }
    /// Upper bound in ms for the exponential reconnect backoff (0 = no backoff).
    public static var reconnectIntervalMax: Self { .init(ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX") }
    /// ms a ZMTP handshake may take (default 30000).
    public static var handshakeInterval: Self { .init(ZMQ_HANDSHAKE_IVL, name: "ZMQ_HANDSHAKE_IVL") }
    /// SO_KEEPALIVE: -1 OS default, 0 off, 1 on.
    public static var tcpKeepalive: Self { .init(ZMQ_TCP_KEEPALIVE, name: "ZMQ_TCP_KEEPALIVE") }
    /// TCP_KEEPIDLE / TCP_KEEPINTVL in seconds, TCP_KEEPCNT probes (-1 = OS default).
    public static var tcpKeepaliveIdle: Self { .init(ZMQ_TCP_KEEPALIVE_IDLE, name: "ZMQ_TCP_KEEPALIVE_IDLE") }
    public static var tcpKeepaliveInterval: Self { .init(ZMQ_TCP_KEEPALIVE_INTVL, name: "ZMQ_TCP_KEEPALIVE_INTVL") }
    public static var tcpKeepaliveCount: Self { .init(ZMQ_TCP_KEEPALIVE_CNT, name: "ZMQ_TCP_KEEPALIVE_CNT") }
    /// listen(2) backlog.
    public static var backlog: Self { .init(ZMQ_BACKLOG, name: "ZMQ_BACKLOG") }
    /// Read-only: ZMQ_POLLIN/ZMQ_POLLOUT bits now (for external event loops with `fileDescriptor`).
    public static var events: Self { .init(ZMQ_EVENTS, name: "ZMQ_EVENTS") }
    /// Read-only: a file descriptor that becomes readable when `events` may have changed (edge-triggered).
    public static var fileDescriptor: Self { .init(ZMQ_FD, name: "ZMQ_FD") }
    /// Read-only: the libzmq socket type constant.
    public static var socketType: Self { .init(ZMQ_TYPE, name: "ZMQ_TYPE") }
}

extension SocketOption where Value == Int64 {
    /// Largest inbound message in bytes (-1 = unlimited, the default). A peer that sends a larger one is
    /// disconnected by libzmq; the message is dropped. Not enforced on inproc. See docs/TRANSPORT.md.
    public static var maxMessageSize: Self { .init(ZMQ_MAXMSGSIZE, name: "ZMQ_MAXMSGSIZE") }
}

extension SocketOption where Value == Bool {
    /// ROUTER: sending to an unknown routing id throws EHOSTUNREACH instead of silently dropping,
    /// and a full peer makes sends would-block instead of dropping.
    public static var routerMandatory: Self { .init(ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY") }
    /// ROUTER: a new connection with a routing id already in use takes it over (reconnecting workers).
    public static var routerHandover: Self { .init(ZMQ_ROUTER_HANDOVER, name: "ZMQ_ROUTER_HANDOVER") }
    /// Queue messages only to completed connections (no queueing while disconnected).
    public static var immediate: Self { .init(ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE") }
    /// DEALER/ROUTER: send an empty message to the peer on connect (lets a ROUTER learn the peer at once).
    public static var probeRouter: Self { .init(ZMQ_PROBE_ROUTER, name: "ZMQ_PROBE_ROUTER") }
    public static var ipv6: Self { .init(ZMQ_IPV6, name: "ZMQ_IPV6") }
    /// Read-only: more frames of the current message remain (see also `Socket.moreToReceive`).
    public static var receiveMore: Self { .init(ZMQ_RCVMORE, name: "ZMQ_RCVMORE") }
    /// CURVE: this socket is the server side (needs `curveSecretKey`). Room for the security issue.
    public static var curveServer: Self { .init(ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER") }
}

extension SocketOption where Value == [UInt8] {
    /// The routing id a DEALER announces to a ROUTER (1–255 bytes, not starting with 0). Set before connect.
    public static var routingId: Self { .init(ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID") }
    /// ROUTER: the routing id to give the peer of the next `connect`.
    public static var connectRoutingId: Self { .init(ZMQ_CONNECT_ROUTING_ID, name: "ZMQ_CONNECT_ROUTING_ID") }
    /// SUB: prefix filters.
    public static var subscribe: Self { .init(ZMQ_SUBSCRIBE, name: "ZMQ_SUBSCRIBE") }
    public static var unsubscribe: Self { .init(ZMQ_UNSUBSCRIBE, name: "ZMQ_UNSUBSCRIBE") }
    /// CURVE keys, 32 raw bytes each (Z85 text also accepted by libzmq as a 40-byte value).
    /// Server: `curveServer = true` + `curveSecretKey`. Client: `curvePublicKey`, `curveSecretKey`,
    /// `curveServerKey` (the server's public key). Requires libzmq built with libsodium (Debian's is).
    public static var curvePublicKey: Self { .init(ZMQ_CURVE_PUBLICKEY, name: "ZMQ_CURVE_PUBLICKEY") }
    public static var curveSecretKey: Self { .init(ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY") }
    public static var curveServerKey: Self { .init(ZMQ_CURVE_SERVERKEY, name: "ZMQ_CURVE_SERVERKEY") }
}

extension SocketOption where Value == String {
    /// Read-only: the endpoint last bound/connected, wildcards resolved.
    public static var lastEndpoint: Self { .init(ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT") }
    /// ZAP authentication domain (for CURVE with a ZAP handler).
    public static var zapDomain: Self { .init(ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN") }
}

extension Socket {
    /// Sets a socket option. Most options only affect connections made after they are set.
    public func set<V>(_ option: SocketOption<V>, _ value: V) throws {
        let h = try live("zmq_setsockopt(\(option.name))")
        if option.code == ZMQ_LINGER, let ms = value as? Int32, ms < 0 {
            throw ZMQError(errno: EINVAL, message: "infinite linger would let context termination hang; give a bound in ms",
                           operation: "zmq_setsockopt(ZMQ_LINGER)")
        }
        try value.withOptionBytes { bytes in
            while zmq_setsockopt(h, option.code, bytes.baseAddress, bytes.count) != 0 {
                let e = zmq_errno()
                if e != EINTR { throw ZMQError(errno: e, operation: "zmq_setsockopt(\(option.name))") }
            }
        }
    }

    /// Reads a socket option.
    public func get<V>(_ option: SocketOption<V>) throws -> V {
        let h = try live("zmq_getsockopt(\(option.name))")
        let capacity = V.readCapacity
        return try withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { buffer in
            var size = capacity
            while zmq_getsockopt(h, option.code, buffer.baseAddress, &size) != 0 {
                let e = zmq_errno()
                if e != EINTR { throw ZMQError(errno: e, operation: "zmq_getsockopt(\(option.name))") }
                size = capacity
            }
            return V(optionBytes: UnsafeRawBufferPointer(rebasing: buffer[..<min(size, capacity)]))
        }
    }
}
