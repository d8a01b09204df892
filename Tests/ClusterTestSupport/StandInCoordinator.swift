import Foundation
import WireProtocol
import ZeroMQ

/// A ROUTER that plays the coordinator for a client under test: it hands the test each request as it
/// comes (every wait bounded), answers what the test says, and can go away (`vanish`: the client sees its
/// connection lost) and come back on the same endpoint (`comeBack`). Use it from one thread.
public final class StandInCoordinator {
    /// One request as it arrived: the client's routing id, its two OQP frames, decoded.
    public struct Request {
        public let peer: [UInt8]
        public let frames: [[UInt8]]
        public let requestID: UInt32
        public let message: WireProtocol.Message
    }

    public let endpoint: String
    private let context: Context
    private var router: Socket?
    private var poller = Poller()

    public init() throws {
        context = try Context()
        let socket = try Self.bound(context, "tcp://127.0.0.1:*")
        endpoint = try socket.lastEndpoint()
        router = socket
        _ = poller.add(socket)
    }

    deinit { vanish() }

    private static func bound(_ context: Context, _ endpoint: String) throws -> Socket {
        let socket = try Socket(context, type: .router)
        try socket.set(.linger, 0)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        do {
            try socket.bind(endpoint)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// The next request, or nil when none came within `timeout`.
    public func receive(timeout: Duration) throws -> Request? {
        guard let router else { throw ClusterError("the stand-in coordinator is away") }
        let deadline = ContinuousClock.now + timeout
        while true {
            if let frames = try router.receiveMultipart(flags: .dontWait) {
                guard frames.count == 3, case .success(let env) = WireCodec.decode(Array(frames[1...])) else {
                    throw ClusterError("the stand-in got an undecodable message: \(frames.map(\.count)) bytes")
                }
                return Request(peer: frames[0], frames: Array(frames[1...]), requestID: env.requestID, message: env.message)
            }
            let left = deadline - .now
            if left <= .zero { return nil }
            _ = try poller.poll(timeout: min(left, .milliseconds(100)))
        }
    }

    /// The next request of `command`, answering every other one with `others` (nil: ignored) meanwhile;
    /// throws when none came within `timeout`.
    public func expect(_ command: Command, timeout: Duration,
                       others: (Request) -> WireProtocol.Message? = { _ in nil }) throws -> Request {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let r = try receive(timeout: deadline - .now) else { break }
            if r.message.command == command { return r }
            if let answer = others(r) { try reply(to: r, answer) }
        }
        throw ClusterError("the stand-in coordinator received no \(command) within \(timeout)")
    }

    public func reply(to request: Request, _ message: WireProtocol.Message) throws {
        guard let router else { throw ClusterError("the stand-in coordinator is away") }
        _ = try router.sendMultipart([request.peer] + WireCodec.encode(message, requestID: request.requestID))
    }

    /// Closes the socket at once (linger 0): a connected client sees its connection end.
    public func vanish() {
        router?.close()
        router = nil
    }

    /// Binds the same endpoint again (retrying while the old listener is being released), bounded.
    public func comeBack(timeout: Duration = .seconds(10)) throws {
        var lastError: (any Error)?
        try waitUntil("the stand-in to bind \(endpoint) again", timeout: timeout.seconds, logs: { lastError.map { "\($0)" } ?? "" }) {
            do {
                let socket = try Self.bound(context, endpoint)
                router = socket
                poller = Poller()
                _ = poller.add(socket)
                return true
            } catch {
                lastError = error
                return false
            }
        }
    }
}
