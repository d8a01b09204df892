import Foundation
import ZeroMQ

public struct WorkerConfig: Sendable {
    /// Coordinator endpoint, e.g. tcp://head:7600; or several, comma-separated (one `--ha` group).
    public var connect: String
    /// Shown by `opctl workers`; host:pid by default.
    public var name: String
    /// Parts run at once (the local queue's limit).
    public var slots: Int
    /// Placement tags (A6): operations that require a tag only go to workers that have it.
    public var tags: [String]
    /// Parts accepted beyond `slots`, waiting in the local priority queue so a slot never idles for a
    /// network round trip. Small keeps priorities meaningful cluster-wide (the coordinator still holds
    /// the backlog); large helps throughput of tiny operations.
    public var prefetch: Int
    /// Heartbeat used until WELCOME announces the coordinator's.
    public var heartbeatIntervalMs: UInt32 = 1000
    public var liveness: UInt32 = 3
    /// Reconnect backoff: doubles from min to max while the coordinator is unreachable.
    public var reconnectMinMs: Int = 100
    public var reconnectMaxMs: Int = 5000
    /// CURVE keys (PROTOCOL.md §12); nil connects without (a loopback or `--insecure` coordinator).
    public var curve: CurveClientKeys?

    public init(connect: String, name: String? = nil, slots: Int? = nil, tags: [String] = [], prefetch: Int? = nil) {
        self.connect = connect
        let host = ProcessInfo.processInfo.hostName
        self.name = name ?? "\(host):\(getpid())"
        self.slots = max(1, slots ?? ProcessInfo.processInfo.activeProcessorCount)
        self.tags = tags
        self.prefetch = max(0, prefetch ?? self.slots)
    }
}
