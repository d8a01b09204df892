import Foundation
import Logging
import SchedulerCore
import Synchronization
import WireProtocol
import ZeroMQ

public struct CoordinatorConfig: Sendable {
    /// ZeroMQ endpoint of the one ROUTER socket that workers and clients connect to.
    public var bind: String
    /// Application heartbeat announced in WELCOME; a peer is lost after `liveness` silent intervals.
    public var heartbeatIntervalMs: UInt32 = WireVersion.defaultHeartbeatIntervalMs
    public var liveness: UInt32 = WireVersion.defaultLiveness
    /// Messages taken off the socket before the outbox is flushed; bounds latency under load
    /// while still letting one flush coalesce many dispatches into one DISPATCH per worker.
    public var receiveBurst = 2048
    /// A worker holds at most slots + min(its prefetch, this) parts, whatever credit it grants.
    public var maxPrefetch = 256
    /// A part dispatched but not started within this long is taken back and dispatched again (ms; 0 = never).
    public var startTimeoutMs: Int64 = 120_000
    /// A finished run is kept this long, then evicted (µs).
    public var retainMicros: Int64 = 24 * 3_600_000_000
    /// At most this many finished runs are kept.
    public var retainRuns = 10_000
    /// `--retain-bytes`: finished ops' results, texts and metadata kept (SchedulerConfig.retainBytes).
    public var retainBytes = Int.max
    /// Bytes of attempts' output (stdout/stderr tails) kept for LOGS, oldest evicted first; 0 keeps none.
    public var logStoreBytes = 64 << 20
    /// A client silent this long that is owed nothing (no WAIT, WATCH or reply) is forgotten (µs).
    public var clientIdleMicros: Int64 = 60_000_000
    /// Bytes the coordinator holds for one client that does not read them (beyond what libzmq holds:
    /// `OutputBacklog.socketHighWaterMark` messages); past it a WATCH stream is ended ("watch too slow").
    public var clientOutputBytes = 8 << 20
    /// What all slow clients together may hold: past it each is held to its share (PROTOCOL.md §13).
    public var clientOutputTotalBytes = 64 << 20
    /// A lost worker's routing is kept this long for its late messages, then forgotten (µs).
    public var lostWorkerKeepMicros: Int64 = 300_000_000
    /// The journal's directory (A5, docs/DEPLOY.md "State directory"); nil runs without one (ephemeral:
    /// a restart forgets everything).
    public var stateDirectory: String?
    /// Recover what comes before a damaged journal record and set the rest aside, instead of refusing to start.
    public var salvage = false
    /// A snapshot is taken when the journal since the last one exceeds this and twice that snapshot's size.
    public var snapshotMinBytes = 64 << 20
    /// For tests only: the loop holds this long (µs) after each SUBMIT of a run whose name starts with
    /// "stall", standing in for an input too large to finish within the loop's budget.
    public var testStallAfterSubmitMicros: Int64 = 0
    /// CURVE keys and the allow file (PROTOCOL.md §12); nil accepts anyone who reaches the port
    /// (loopback, or `opcoord --insecure`).
    public var access: AccessControl?
    /// Off loopback without keys by the operator's explicit choice: said in status and WORKERS replies.
    public var insecure = false
    /// The HTTP side (docs/HTTP.md): the loop also answers requests on this in-process endpoint, as the
    /// `view` role without a key, and publishes metrics on the board once a second. nil: no HTTP side.
    public var internalEndpoint: String?
    public var metricsBoard: MetricsBoard?
    /// `--ha` (issue 29): where the election leaves this coordinator's role (`setRole`); nil serves always.
    public var leadership: LeadershipBox?
    /// Hot standby (issue 29): sync or async replication to standbys, and `--follow`.
    public var replication = ReplicationConfig()

    public init(bind: String) { self.bind = bind }
}

/// The coordinator process minus argument parsing: one thread owns the ROUTER socket and the core.
///
/// `run` blocks the calling thread until `stop()` (callable from any thread, e.g. a signal handler's
/// queue) and then tells every worker it is leaving. Everything mutable lives in `CoordinatorLoop`,
/// which never leaves the `run` thread; the only cross-thread state is the stop flag and the waker.
public final class CoordinatorServer: Sendable {
    public let config: CoordinatorConfig
    private let logger: Logger
    private let context: Context
    private let waker: Waker
    private let stopping = Atomic<Bool>(false)

    public init(config: CoordinatorConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger
        context = try Context()
        waker = try Waker()
    }

    /// Runs until `stop()`. `ready` gets the bound endpoint (with the real port when binding `:*`).
    /// The ZeroMQ context the loop's socket lives in: in-process peers (the HTTP side) connect through it.
    public var zmqContext: Context { context }

    /// `afterLoop` runs once the loop has stopped, before the ZeroMQ context ends: in-process peers
    /// (the HTTP side) close their sockets there.
    public func run(ready: (String) -> Void = { _ in }, afterLoop: () -> Void = {}) throws {
        // The ZAP handler first: a CURVE socket bound without one would admit any key.
        let zap = try config.access.map { try ZAPServer(context: context, access: $0, waker: waker) }
        defer { zap?.stop() }
        let loop = try CoordinatorLoop(config: config, context: context, waker: waker, logger: logger)
        ready(loop.endpoint)
        logger.info("opcoord listening on \(loop.endpoint)\(config.access == nil ? "" : " (CURVE)")")
        defer { afterLoop() }
        try loop.run { stopping.load(ordering: .relaxed) }
        loop.shutdown()
        zap?.stop()
        try? context.terminate(timeout: .seconds(2))
    }

    /// Re-reads the allow file (SIGHUP); sessions of keys it no longer lists are dropped at once.
    public func reloadAccess() {
        config.access?.reload()
        waker.wake()
    }

    /// (`--ha`) The election's latest role for the loop, from any thread: stored, and the loop woken.
    public func setRole(_ role: CoordinatorRole) {
        config.leadership?.set(role)
        waker.wake()
    }

    /// Turns a standby (`--follow`) into the serving coordinator at once (issue 29): the entry point
    /// an election calls when it wins. Safe from any thread; nothing happens on a coordinator that serves.
    public func promote() {
        config.replication.promotion.request()
        waker.wake()
    }

    /// A standby follows `leader` from now on (the leader changed: an election elsewhere), from its own
    /// position, with the same name and keys. Safe from any thread. A coordinator that serves is not
    /// turned into a standby by this (it logs so): restart it with `--follow`.
    public func follow(leader: String) {
        config.replication.promotion.requestFollow(leader)
        waker.wake()
    }

    /// Asks `run` to return; safe from any thread, idempotent.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        waker.wake()
    }
}
