import Foundation
import OpClient
import WireProtocol
import ZeroMQ

/// Where the built executables are: $OPQ_BIN_DIR (set by scripts/test), else next to the test bundle.
public enum Binaries {
    public static var directory: String {
        if let d = ProcessInfo.processInfo.environment["OPQ_BIN_DIR"], !d.isEmpty { return d }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }

    public static func path(_ name: String) -> String { directory + "/" + name }
}

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass (for states that have no event):
/// the one bounded wait of the process-level tests.
public func waitUntil(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if try condition() { return }
        usleep(20_000)
    }
    throw ClusterError("timed out after \(timeout) s waiting for \(what)")
}

public struct ClusterError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// A coordinator and workers as real processes on loopback, each logging to a file in a temp dir.
/// Every wait is bounded; `stop()` (also on deinit) ends every process it started, by PID.
public final class LocalCluster: @unchecked Sendable {
    public let dir: URL
    public let endpoint: String
    public let heartbeatMs: Int
    public let liveness: Int
    public private(set) var coordinator: Process
    public private(set) var workers: [String: Process] = [:]
    private var stopped = false

    /// The coordinator's state directory (its journal), kept across `restartCoordinator`; nil when ephemeral.
    public let stateDirectory: String?
    private let coordinatorArgs: [String]
    private var coordinatorStarts = 1

    /// With keys (PROTOCOL.md §12): the key files and allow file live in `keysDirectory`; the cluster's
    /// own requests use the key "admin" and its workers the key "worker" unless told otherwise.
    public let keysDirectory: URL?

    /// `coordinatorArgs`: more opcoord options (e.g. `--start-timeout 1`). `journal: false` runs it
    /// `--ephemeral` (a restart forgets everything); `stateDirectory` puts its journal there instead of
    /// in the cluster's temporary directory. `keys: true` runs it with CURVE: a coordinator key, an allow
    /// file listing "admin" (admin) and "worker" (worker); add more with `addKey`.
    public init(heartbeatMs: Int = 200, liveness: Int = 3, coordinatorArgs: [String] = [], journal: Bool = true,
                stateDirectory: String? = nil, keys: Bool = false) throws {
        self.heartbeatMs = heartbeatMs
        self.liveness = liveness
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("opq-it-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        self.stateDirectory = journal ? stateDirectory ?? dir.appendingPathComponent("state").path : nil
        var keyArgs: [String] = []
        if keys {
            let k = dir.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: k, withIntermediateDirectories: true)
            try KeyFile.create(at: k.appendingPathComponent("coordinator.key").path)
            _ = FileManager.default.createFile(atPath: k.appendingPathComponent("allow.txt").path, contents: nil)
            keysDirectory = k
            try Self.addKey("admin", roles: "admin", scopes: [], in: k)
            try Self.addKey("worker", roles: "worker", scopes: [], in: k)
            keyArgs = ["--key", k.appendingPathComponent("coordinator.key").path, "--allow", k.appendingPathComponent("allow.txt").path]
        } else {
            keysDirectory = nil
        }
        // No HTTP side unless the test asks (`--http`): many coordinators run side by side here.
        let httpArgs = coordinatorArgs.contains("--http") ? [] : ["--http", "off"]
        self.coordinatorArgs = coordinatorArgs + keyArgs + httpArgs + (self.stateDirectory.map { ["--state-dir", $0] } ?? ["--ephemeral"])
        let endpointFile = dir.appendingPathComponent("endpoint").path
        coordinator = try Self.launch("opcoord", ["--bind", "tcp://127.0.0.1:*", "--endpoint-file", endpointFile,
                                                  "--heartbeat-ms", "\(heartbeatMs)", "--liveness", "\(liveness)"] + self.coordinatorArgs,
                                      log: dir.appendingPathComponent("opcoord.log"))
        let deadline = Date().addingTimeInterval(20)
        var found: String?
        while Date() < deadline {
            if let text = try? String(contentsOfFile: endpointFile, encoding: .utf8), text.hasPrefix("tcp://") { found = text; break }
            guard coordinator.isRunning else { break }
            usleep(20_000)
        }
        guard let found else {
            let log = (try? String(contentsOf: dir.appendingPathComponent("opcoord.log"), encoding: .utf8)) ?? ""
            coordinator.terminate()
            throw ClusterError("opcoord did not report its endpoint within 20 s: \(log)")
        }
        endpoint = found
    }

    deinit { stop() }

    /// The HTTP side's base URL ("http://127.0.0.1:PORT"), from the coordinator's log line saying where
    /// it listens (started with `--http 127.0.0.1:0`).
    public func httpBase(timeout: Double = 20) throws -> String {
        var found: String?
        try waitUntil("the coordinator's HTTP side to listen", timeout: timeout) {
            let log = (try? String(contentsOf: dir.appendingPathComponent("opcoord.log"), encoding: .utf8)) ?? ""
            guard let range = log.range(of: "dashboard and /metrics on http://", options: .backwards) else { return false }
            let rest = log[range.upperBound...]
            found = "http://" + rest.prefix { $0 != "/" && !$0.isWhitespace }
            return true
        }
        return found!
    }

    /// Stops the coordinator (SIGTERM with a bounded wait, or at once with `crash`: SIGKILL), runs
    /// `whileDown`, and starts a new one on the same endpoint and state directory (`extraArgs` added,
    /// e.g. `--salvage`). Returns the old one's exit status (or the signal that ended it).
    @discardableResult
    public func restartCoordinator(crash: Bool = false, extraArgs: [String] = [], whileDown: () throws -> Void = {}) throws -> Int32 {
        kill(coordinator.processIdentifier, crash ? SIGKILL : SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while coordinator.isRunning && Date() < deadline { usleep(10_000) }
        if coordinator.isRunning { kill(coordinator.processIdentifier, SIGKILL); coordinator.waitUntilExit() }
        let status = coordinator.terminationStatus
        try whileDown()
        coordinatorStarts += 1
        coordinator = try Self.launch("opcoord", ["--bind", endpoint, "--heartbeat-ms", "\(heartbeatMs)", "--liveness", "\(liveness)"]
                                          + coordinatorArgs + extraArgs,
                                      log: dir.appendingPathComponent("opcoord-\(coordinatorStarts).log"))
        return status
    }

    public static func launch(_ name: String, _ args: [String], log: URL, env: [String: String] = [:]) throws -> Process {
        try launch(executable: Binaries.path(name), args, log: log, env: env)
    }

    /// Starts a program with stdout and stderr going to `log`.
    public static func launch(executable: String, _ args: [String], log: URL, env: [String: String] = [:]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        p.standardOutput = handle
        p.standardError = handle
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        try p.run()
        return p
    }

    // MARK: keys

    /// The allow file (with keys).
    public var allowFile: String? { keysDirectory?.appendingPathComponent("allow.txt").path }

    /// The secret key file of key `name` (made by `addKey`).
    public func keyPath(_ name: String) -> String? { keysDirectory?.appendingPathComponent("\(name).key").path }

    /// Makes key `name` and lists it in the allow file with `roles` (comma-separated) and `scopes`;
    /// a running coordinator picks the change up by itself.
    /// Returns once the coordinator has re-read the file.
    public func addKey(_ name: String, roles: String, scopes: [String] = []) throws {
        guard let keysDirectory else { throw ClusterError("this cluster has no keys") }
        try awaitingReload { try Self.addKey(name, roles: roles, scopes: scopes, in: keysDirectory) }
    }

    /// Runs `change` (to the allow file) and waits until the coordinator logs that it re-read the file.
    private func awaitingReload(_ change: () throws -> Void) throws {
        let log = dir.appendingPathComponent(coordinatorStarts == 1 ? "opcoord.log" : "opcoord-\(coordinatorStarts).log")
        func reloads() -> Int {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").components(separatedBy: "allow file reloaded").count - 1
        }
        let before = reloads()
        try change()
        try waitUntil("the coordinator re-read its allow file", timeout: 10) { reloads() > before }
    }

    private static func addKey(_ name: String, roles: String, scopes: [String], in dir: URL) throws {
        let pair = try KeyFile.create(at: dir.appendingPathComponent("\(name).key").path)
        let line = ([Z85.encode(pair.publicKey), name, roles] + scopes).joined(separator: " ") + "\n"
        let h = try FileHandle(forWritingTo: dir.appendingPathComponent("allow.txt"))
        try h.seekToEnd()
        try h.write(contentsOf: Data(line.utf8))
        try h.close()
    }

    /// Removes key `name`'s line from the allow file (revokes it); the coordinator notices the change
    /// by itself (returns at once; `waitForReload` waits for it).
    public func revokeKey(_ name: String, waitForReload: Bool = false) throws {
        guard let allowFile else { throw ClusterError("this cluster has no keys") }
        let text = try String(contentsOfFile: allowFile, encoding: .utf8)
        let kept = text.split(separator: "\n").filter { $0.split(separator: " ").dropFirst().first.map(String.init) != name }
        // A new file renamed over the old one: the coordinator never reads half of it.
        let tmp = allowFile + ".new"
        let write = {
            try (kept.joined(separator: "\n") + "\n").write(toFile: tmp, atomically: false, encoding: .utf8)
            guard rename(tmp, allowFile) == 0 else { throw ClusterError("rename failed: \(errno)") }
        }
        if waitForReload { try awaitingReload(write) } else { try write() }
    }

    /// The coordinator's public key file (`--coordinator-key`).
    public var coordinatorPublicKey: String? { keysDirectory?.appendingPathComponent("coordinator.key.pub").path }

    /// Client keys for key `name`; nil without keys.
    public func clientKeys(_ name: String) throws -> CurveClientKeys? {
        guard let path = keyPath(name), let pub = coordinatorPublicKey else { return nil }
        return CurveClientKeys(keys: try KeyFile.loadSecret(path), server: try KeyFile.loadPublic(pub))
    }

    /// `--key` and `--coordinator-key` for a process using key `name` (empty without keys).
    public func keyArguments(_ name: String) -> [String] {
        guard let path = keyPath(name), let pub = coordinatorPublicKey else { return [] }
        return ["--key", path, "--coordinator-key", pub]
    }

    /// Starts a worker and waits until the coordinator lists it. With keys it uses key `key`.
    @discardableResult
    public func startWorker(_ name: String, slots: Int = 2, prefetch: Int = 0, tags: [String] = [], key: String = "worker",
                            extraArgs: [String] = []) throws -> Process {
        var args = ["--connect", endpoint, "--name", name, "--slots", "\(slots)", "--prefetch", "\(prefetch)"] + keyArguments(key) + extraArgs
        if !tags.isEmpty { args += ["--tags", tags.joined(separator: ",")] }
        let p = try Self.launch("opworker", args, log: dir.appendingPathComponent("\(name).log"))
        workers[name] = p
        try waitUntil("worker \(name) registered", timeout: 20) { try self.workerList().contains { $0.name == name } }
        return p
    }

    /// A connection; with keys, as key `key` ("admin" unless told otherwise).
    public func connect(timeout: Duration = .seconds(10), as key: String = "admin") throws -> CoordinatorConnection {
        try CoordinatorConnection(endpoint: endpoint, timeout: timeout, curve: try clientKeys(key))
    }

    public func workerList() throws -> [WireWorkerInfo] {
        guard case .workersReply(let r) = try connect().request(.workers) else { throw ClusterError("no WORKERS reply") }
        return r.workers
    }

    /// Submits into run `run` (created by the first submit, joined by later ones), so a test can add
    /// ops over several submits and name them by bare id.
    public func submit(_ ops: [WireOperation], queues: [WireQueueSettings] = [], run: String = "test") throws -> WireSubmitReply {
        var s = WireSubmit()
        s.operations = ops
        s.queues = queues
        s.run = run
        s.append = true
        guard case .submitReply(let r) = try connect().request(.submit(s)) else { throw ClusterError("no SUBMIT reply") }
        return r
    }

    /// Waits (bounded) until every id has finished; throws with the pending ids otherwise.
    @discardableResult
    public func wait(_ ids: [String], timeout: Double = 30) throws -> WireWaitReply {
        var w = WireWait()
        w.opIds = ids
        w.timeoutUs = Int64(timeout * 1_000_000)
        let reply = try connect().request(.wait(w), timeout: .seconds(timeout + 10))
        guard case .waitReply(let r) = reply else { throw ClusterError("no WAIT reply") }
        if !r.finished { throw ClusterError("not finished within \(timeout) s: \(r.pending.prefix(20)) \(logs())") }
        return r
    }

    public func status(_ ids: [String] = [], withResults: Bool = false) throws -> [String: WireOpStatus] {
        var s = WireStatus()
        s.opIds = ids
        s.ops = true
        s.withResults = withResults
        guard case .statusReply(let r) = try connect().request(.status(s)) else { throw ClusterError("no STATUS reply") }
        return Dictionary(r.ops.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    public func statusReply() throws -> WireStatusReply {
        guard case .statusReply(let r) = try connect().request(.status(WireStatus())) else { throw ClusterError("no STATUS reply") }
        return r
    }

    @discardableResult
    public func ack(_ message: WireProtocol.Message) throws -> WireAck {
        guard case .ack(let a) = try connect().request(message) else { throw ClusterError("no ACK for \(message.command)") }
        return a
    }

    public func signal(_ worker: String, _ sig: Int32) {
        if let p = workers[worker] { kill(p.processIdentifier, sig) }
    }

    /// Polls `condition` until it holds or `timeout` seconds pass; the error carries the processes' logs.
    public func waitUntil(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
        do { try ClusterTestSupport.waitUntil(what, timeout: timeout, condition) } catch let e as ClusterError {
            throw ClusterError("\(e.description)\n\(logs())")
        }
    }

    public func logs() -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path))?.filter { $0.hasSuffix(".log") } ?? []
        return files.sorted().map { f in
            let text = (try? String(contentsOfFile: dir.appendingPathComponent(f).path, encoding: .utf8)) ?? ""
            return "--- \(f)\n" + text.split(separator: "\n").suffix(30).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// SIGTERM to everything (SIGCONT first, in case a test froze it), then SIGKILL after 5 s.
    /// Returns the coordinator's exit status.
    @discardableResult
    public func stop() -> Int32 {
        guard !stopped else { return coordinator.terminationStatus }
        stopped = true
        let all = Array(workers.values) + [coordinator]
        for p in all where p.isRunning {
            kill(p.processIdentifier, SIGCONT)
            kill(p.processIdentifier, SIGTERM)
        }
        let deadline = Date().addingTimeInterval(5)
        for p in all {
            while p.isRunning && Date() < deadline { usleep(10_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        }
        try? FileManager.default.removeItem(at: dir)
        return coordinator.isRunning ? -1 : coordinator.terminationStatus
    }
}

/// A wire operation with the fields tests use.
public func op(_ id: String, kind: String = "noop", payload: String = "", after: [String] = [], priority: Int32 = 0,
        queue: String = "", parts: UInt32 = 1, succeededPolicy: Bool = false, lossRetries: UInt32? = nil) -> WireOperation {
    var o = WireOperation()
    o.id = id
    o.kind = kind
    o.payload = Data(payload.utf8)
    o.after = after
    o.priority = priority
    o.queue = queue
    o.parts = parts
    if succeededPolicy { o.policy = .succeeded }
    if let lossRetries { o.lossRetries = lossRetries }
    return o
}

public func shell(_ id: String, _ script: String, after: [String] = [], queue: String = "", grace: Double? = nil) -> WireOperation {
    var payload: [String: Any] = ["command": script]
    if let grace { payload["grace"] = grace }
    let json = String(decoding: try! JSONSerialization.data(withJSONObject: payload), as: UTF8.self)
    return op(id, kind: "shell", payload: json, after: after, queue: queue)
}

public func queueSettings(_ name: String, maxConcurrent: Int32? = nil, suspended: Bool? = nil) -> WireQueueSettings {
    var q = WireQueueSettings()
    q.name = name
    if let maxConcurrent { q.maxConcurrent = maxConcurrent }
    if let suspended { q.suspended = suspended }
    return q
}

extension WireOpStatus {
    public var succeededResult: String? {
        if case .succeeded(let d)? = outcome.result { return String(decoding: d, as: UTF8.self) }
        return nil
    }
    public var isCancelledOutcome: Bool { if case .cancelled? = outcome.result { true } else { false } }
    public var isSucceeded: Bool { if case .succeeded? = outcome.result { true } else { false } }
}
