import Foundation
import WireProtocol
import ZeroMQ

/// A client's connection to the coordinator: one DEALER, requests matched to replies by request id,
/// and an optional event subscription (WATCH).
///
/// Not thread-safe: use it from one thread (like the socket it owns). `opctl` uses one per command;
/// the Swift API wraps one in a dedicated thread.
public final class CoordinatorConnection {
    public let endpoint: String
    public let timeout: Duration
    private let context: Context
    private let socket: Socket
    private var nextRequest: UInt32 = 1
    private var watchRequest: UInt32?
    /// Events that arrived while waiting for a reply.
    private var pendingEvents: [WireEvent] = []

    /// The default endpoint: `$OPCOORD`, else tcp://127.0.0.1:7600.
    public static var defaultEndpoint: String {
        ProcessInfo.processInfo.environment["OPCOORD"].flatMap { $0.isEmpty ? nil : $0 } ?? "tcp://127.0.0.1:7600"
    }

    public init(endpoint: String = CoordinatorConnection.defaultEndpoint, timeout: Duration = .seconds(10)) throws {
        self.endpoint = endpoint
        self.timeout = timeout
        context = try Context()
        socket = try Socket(context, type: .dealer)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.set(.sendHighWaterMark, 0)
        try socket.set(.receiveHighWaterMark, 0)
        do {
            try socket.connect(endpoint)
        } catch {
            throw ClientError.badEndpoint(endpoint, "\(error)")
        }
    }

    deinit { socket.close() }

    /// Sends `message` and returns the reply. An ERROR reply is thrown as `ClientError.server`.
    public func request(_ message: WireProtocol.Message, timeout: Duration? = nil) throws -> WireProtocol.Message {
        let id = nextRequest
        nextRequest = nextRequest == .max ? 1 : nextRequest + 1
        guard try socket.sendMultipart(WireCodec.encode(message, requestID: id)) else {
            throw ClientError.timeout(message.command, endpoint)
        }
        let deadline = ContinuousClock.now + (timeout ?? self.timeout)
        while true {
            guard let envelope = try receive(until: deadline) else {
                throw ClientError.timeout(message.command, endpoint)
            }
            if envelope.requestID == watchRequest, case .event(let e) = envelope.message {
                pendingEvents.append(contentsOf: e.events)
                continue
            }
            guard envelope.requestID == id else { continue }   // a late reply to an earlier request
            if case .error(let e) = envelope.message { throw ClientError.server(e.code, e.message) }
            return envelope.message
        }
    }

    /// Subscribes to state changes (the KVO analogue); read them with `nextEvents`.
    public func watch(queue: String? = nil, opIDs: [String] = [], withResults: Bool = false, progress: Bool = false) throws {
        var w = WireWatch()
        w.queue = queue ?? ""
        w.opIds = opIDs
        w.withResults = withResults
        w.progress = progress
        watchRequest = nextRequest
        _ = try request(.watch(w))
    }

    /// Events received so far or within `timeout`; empty when nothing came.
    public func nextEvents(timeout: Duration) throws -> [WireEvent] {
        if !pendingEvents.isEmpty {
            defer { pendingEvents.removeAll() }
            return pendingEvents
        }
        let deadline = ContinuousClock.now + timeout
        while let envelope = try receive(until: deadline) {
            if envelope.requestID == watchRequest, case .event(let e) = envelope.message { return e.events }
        }
        return []
    }

    private func receive(until deadline: ContinuousClock.Instant) throws -> Envelope? {
        let poller = Poller()
        _ = poller.add(socket)
        while true {
            if let frames = try socket.receiveMultipart(flags: .dontWait) {
                switch WireCodec.decode(frames) {
                case .success(let envelope): return envelope
                case .failure(let error): throw ClientError.malformedReply("\(error)")
                }
            }
            let left = deadline - ContinuousClock.now
            if left <= .zero { return nil }
            try poller.poll(timeout: left)
        }
    }
}

public enum ClientError: Error, CustomStringConvertible {
    case badEndpoint(String, String)
    case timeout(Command, String)
    case server(WireErrorCode, String)
    case malformedReply(String)
    case unexpectedReply(Command, expected: String)

    public var description: String {
        switch self {
        case .badEndpoint(let e, let why): "cannot use coordinator endpoint '\(e)': \(why)"
        case .timeout(let c, let e): "no reply to \(c) from the coordinator at \(e) (is opcoord running there? set --coordinator or $OPCOORD)"
        case .server(let code, let text): "coordinator refused the request (\(code)): \(text)"
        case .malformedReply(let why): "malformed reply from the coordinator: \(why)"
        case .unexpectedReply(let c, let expected): "unexpected reply \(c) (expected \(expected))"
        }
    }
}
