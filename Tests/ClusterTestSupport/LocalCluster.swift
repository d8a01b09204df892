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

/// The one bounded wait of the process-level tests: polls `condition` every `interval` until it holds
/// (for states that have no event to wait on). After `timeout` seconds it throws a `ClusterError` that
/// names `what` and carries `logs()` (a cluster's process logs, when the caller has some); an error
/// thrown by `condition` ends the wait at once. Give `timeout` as what the product promises where it
/// promises a bound; else the default, `unpromisedWaitBound`.
public func waitUntil(_ what: String, timeout: Double = unpromisedWaitBound, interval: Duration = .milliseconds(20),
                      logs: () -> String = { "" }, _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if try condition() { return }
        if interval > .zero { Thread.sleep(forTimeInterval: min(interval, deadline - .now).seconds) }
    }
    if try condition() { return }
    let text = logs()
    throw ClusterError("timed out after \(timeout) s waiting for \(what)" + (text.isEmpty ? "" : "\n\(text)"))
}

/// The bound of a wait for something the product promises to happen but not within a time: long
/// enough for a loaded 2-core machine, short enough to fail well within a suite's time limit.
public let unpromisedWaitBound: Double = 20

extension Duration {
    /// In seconds, for Foundation's APIs.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
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
            // Only its owner may write an allow file (opcoord refuses it otherwise), whatever the umask.
            _ = FileManager.default.createFile(atPath: k.appendingPathComponent("allow.txt").path, contents: nil,
                                               attributes: [.posixPermissions: 0o644])
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
        let started = try Self.launch("opcoord", ["--bind", "tcp://127.0.0.1:*", "--endpoint-file", endpointFile,
                                                  "--heartbeat-ms", "\(heartbeatMs)", "--liveness", "\(liveness)"] + self.coordinatorArgs,
                                      log: dir.appendingPathComponent("opcoord.log"))
        coordinator = started
        var found: String?
        let log = dir.appendingPathComponent("opcoord.log")
        do {
            try ClusterTestSupport.waitUntil("opcoord to report its endpoint", logs: { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }) {
                if let text = try? String(contentsOfFile: endpointFile, encoding: .utf8), text.hasPrefix("tcp://") { found = text; return true }
                guard started.isRunning else { throw ClusterError("opcoord exited before reporting its endpoint: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")") }
                return false
            }
        } catch {
            started.terminate()
            throw error
        }
        endpoint = found!
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
        let old = coordinator
        if (try? ClusterTestSupport.waitUntil("opcoord to stop", timeout: 10, interval: .milliseconds(10)) { !old.isRunning }) == nil {
            kill(old.processIdentifier, SIGKILL)
            old.waitUntilExit()
        }
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
            chmod(tmp, 0o644)
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

    /// WHY for one operation ("OP" or "RUN/OP"): its state, the dependencies it waits on, and why it
    /// does not run (PROTOCOL.md §5.20).
    public func why(_ id: String) throws -> WireWhyReply {
        var w = WireWhy()
        w.opID = id
        guard case .whyReply(let r) = try connect().request(.why(w)) else { throw ClusterError("no WHY reply for \(id)") }
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

    /// `ClusterTestSupport.waitUntil` with this cluster's logs in its error.
    public func waitUntil(_ what: String, timeout: Double = unpromisedWaitBound, interval: Duration = .milliseconds(20),
                          _ condition: () throws -> Bool) throws {
        try ClusterTestSupport.waitUntil(what, timeout: timeout, interval: interval, logs: { self.logs() }, condition)
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
        // 5 s for all of them together, then SIGKILL.
        let deadline = ContinuousClock.now + .seconds(5)
        for p in all {
            let left = max(0, (deadline - .now).seconds)
            if (try? ClusterTestSupport.waitUntil("process \(p.processIdentifier) to stop", timeout: left, interval: .milliseconds(10)) { !p.isRunning }) == nil {
                kill(p.processIdentifier, SIGKILL)
                p.waitUntilExit()
            }
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
