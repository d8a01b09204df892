import DistributedOperationQueue
import Foundation
import OpClient
import WireProtocol

/// A coordinator and workers as real processes on loopback (as `IntegrationTests/LocalCluster`, which
/// lives in another test target): binaries from $OPQ_BIN_DIR or next to the test bundle, logs in a temp
/// dir, every wait bounded, every process ended by PID in `stop()` (also on deinit).
final class Cluster: @unchecked Sendable {
    let dir: URL
    private(set) var endpoint = ""
    private var processes: [Process] = []
    private var stopped = false

    static var binDirectory: String {
        if let d = ProcessInfo.processInfo.environment["OPQ_BIN_DIR"], !d.isEmpty { return d }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }

    /// Starts opcoord and `workers` workers of `slots` slots each (no prefetch, so priorities stay exact).
    init(workers: Int = 2, slots: Int = 2) throws {
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("opq-compat-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let endpointFile = dir.appendingPathComponent("endpoint").path
        try launch("opcoord", ["--bind", "tcp://127.0.0.1:*", "--endpoint-file", endpointFile, "--heartbeat-ms", "200"])
        var found: String?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, found == nil {
            if let t = try? String(contentsOfFile: endpointFile, encoding: .utf8), t.hasPrefix("tcp://") { found = t } else { usleep(10_000) }
        }
        guard let found else { stop(); throw CocoaError(.fileReadNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "opcoord gave no endpoint\n\(logs())"]) }
        endpoint = found
        for i in 0..<workers {
            try launch("opworker", ["--connect", endpoint, "--name", "w\(i)", "--slots", "\(slots)", "--prefetch", "0"])
        }
        // Bounded wait until every worker is registered.
        let connection = try CoordinatorConnection(endpoint: endpoint, timeout: .seconds(5))
        while Date() < deadline {
            if case .workersReply(let r) = try connection.request(.workers), r.workers.count >= workers { return }
            usleep(10_000)
        }
        stop()
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "workers did not register\n\(logs())"])
    }

    deinit { stop() }

    /// Starts one more worker and waits (bounded) until the coordinator lists it.
    func startWorker(name: String, slots: Int = 1, tags: [String]) throws {
        var args = ["--connect", endpoint, "--name", name, "--slots", "\(slots)", "--prefetch", "0"]
        if !tags.isEmpty { args += ["--tags", tags.joined(separator: ",")] }
        try launch("opworker", args)
        let connection = try CoordinatorConnection(endpoint: endpoint, timeout: .seconds(5))
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if case .workersReply(let r) = try connection.request(.workers), r.workers.contains(where: { $0.name == name }) { return }
            usleep(10_000)
        }
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "worker \(name) did not register\n\(logs())"])
    }

    private func launch(_ name: String, _ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binDirectory + "/" + name)
        p.arguments = args
        let log = dir.appendingPathComponent("\(name)-\(processes.count).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        processes.append(p)
    }

    func logs() -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path))?.filter { $0.hasSuffix(".log") } ?? []
        return files.sorted().map { f in
            let text = (try? String(contentsOfFile: dir.appendingPathComponent(f).path, encoding: .utf8)) ?? ""
            return "--- \(f)\n" + text.split(separator: "\n").suffix(20).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// SIGTERM to every process it started, SIGKILL after 5 s.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for p in processes where p.isRunning { kill(p.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        for p in processes {
            while p.isRunning && Date() < deadline { usleep(5_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        }
        try? FileManager.default.removeItem(at: dir)
    }

    func coordinator() throws -> RemoteCoordinator { try RemoteCoordinator(endpoint: endpoint, timeout: .seconds(5)) }
}

/// Values appended from completion blocks and other threads.
final class Recorder<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ x: T) { lock.lock(); items.append(x); lock.unlock() }
    var values: [T] { lock.lock(); defer { lock.unlock() }; return items }
}

/// Polls `condition` every 5 ms for at most `seconds`.
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// A `sleep` operation of `ms` milliseconds.
func sleeper(_ ms: Int, _ name: String, priority: OperationPriority = .normal) -> RemoteOperation {
    RemoteOperation(kind: "sleep", payload: "\(ms)", name: name, queuePriority: priority)
}
