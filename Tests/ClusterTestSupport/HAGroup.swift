import Foundation
import Glibc
import OpClient
import WireProtocol
import ZeroMQ

/// Coordinators of one `--ha` group on one `EtcdServer` (issue 29), each a real opcoord on its own
/// loopback port with its own state directory and log. `stop()` (also on deinit) ends them by PID.
public final class HAGroup: @unchecked Sendable {
    public let etcd: EtcdServer
    public let group: String
    public let dir: URL
    public let endpoints: [String]
    public private(set) var processes: [Process?]
    private let extraArgs: [String]
    private var starts: [Int]
    /// With keys: the group's one coordinator key pair (`coordinator.key`, listed in `allow.txt` with the
    /// `coordinator` role, so each follows the other as a peer), "admin" and "worker" keys, as
    /// LocalCluster makes them.
    public let keysDirectory: URL?

    /// `count` coordinators; `coordinatorArgs` are added to each (e.g. `--heartbeat-ms 200`). `keys: true`
    /// runs the group with CURVE (as it runs off loopback by default).
    public init(etcd: EtcdServer, count: Int = 2, leaseTTL: Int = 2, coordinatorArgs: [String] = [], keys: Bool = false) throws {
        self.etcd = etcd
        group = "g\(UInt32.random(in: 0...UInt32.max))"
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("opq-ha-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        endpoints = try (0..<count).map { _ in "tcp://127.0.0.1:\(try freeLoopbackPort())" }
        var keyArgs: [String] = []
        if keys {
            let k = dir.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: k, withIntermediateDirectories: true)
            let coordinator = try KeyFile.create(at: k.appendingPathComponent("coordinator.key").path)
            _ = FileManager.default.createFile(atPath: k.appendingPathComponent("allow.txt").path,
                                               contents: Data("\(Z85.encode(coordinator.publicKey)) peers coordinator\n".utf8),
                                               attributes: [.posixPermissions: 0o644])
            for (name, roles) in [("admin", "admin"), ("worker", "worker")] {
                let pair = try KeyFile.create(at: k.appendingPathComponent("\(name).key").path)
                let h = try FileHandle(forWritingTo: k.appendingPathComponent("allow.txt"))
                try h.seekToEnd()
                try h.write(contentsOf: Data("\(Z85.encode(pair.publicKey)) \(name) \(roles)\n".utf8))
                try h.close()
            }
            keysDirectory = k
            keyArgs = ["--key", k.appendingPathComponent("coordinator.key").path, "--allow", k.appendingPathComponent("allow.txt").path]
        } else {
            keysDirectory = nil
        }
        extraArgs = ["--ha-lease-ttl", "\(leaseTTL)", "--http", "off"] + keyArgs + coordinatorArgs
        processes = Array(repeating: nil, count: count)
        starts = Array(repeating: 0, count: count)
        for i in 0..<count { try start(i) }
    }

    deinit { stop() }

    /// The command line of coordinator `i`.
    public func arguments(_ i: Int) -> [String] {
        ["--bind", endpoints[i], "--advertise", endpoints[i], "--ha", "etcd=\(etcd.clientURL)", "--ha-group", group,
         "--state-dir", dir.appendingPathComponent("state-\(i)").path] + extraArgs
    }

    public func logPath(_ i: Int) -> URL { dir.appendingPathComponent("opcoord-\(i).log") }

    public func log(_ i: Int) -> String { (try? String(contentsOf: logPath(i), encoding: .utf8)) ?? "" }

    public func logs() -> String {
        (0..<endpoints.count).map { "--- opcoord \($0) (\(endpoints[$0])):\n\(log($0))" }.joined(separator: "\n") + "\n--- etcd:\n\(etcd.log.suffix(3000))"
    }

    /// Starts coordinator `i` (again, after `kill`), appending to its log.
    public func start(_ i: Int) throws {
        starts[i] += 1
        let log = logPath(i)
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Binaries.path("opcoord"))
        p.arguments = arguments(i)
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        processes[i] = p
    }

    /// SIGKILL to coordinator `i`, waited for.
    public func kill(_ i: Int) {
        guard let p = processes[i] else { return }
        Glibc.kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        processes[i] = nil
    }

    public func stop() {
        for (i, p) in processes.enumerated() {
            guard let p, p.isRunning else { continue }
            Glibc.kill(p.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while p.isRunning && Date() < deadline { usleep(10_000) }
            if p.isRunning { Glibc.kill(p.processIdentifier, SIGKILL) }
            processes[i] = nil
        }
    }

    /// Client keys for key `name` ("admin", "worker"); nil without keys.
    public func clientKeys(_ name: String = "admin") throws -> CurveClientKeys? {
        guard let k = keysDirectory else { return nil }
        return CurveClientKeys(keys: try KeyFile.loadSecret(k.appendingPathComponent("\(name).key").path),
                               server: try KeyFile.loadPublic(k.appendingPathComponent("coordinator.key.pub").path))
    }

    /// `--key` and `--coordinator-key` for a process using key `name` (empty without keys).
    public func keyArguments(_ name: String) -> [String] {
        guard let k = keysDirectory else { return [] }
        return ["--key", k.appendingPathComponent("\(name).key").path, "--coordinator-key", k.appendingPathComponent("coordinator.key.pub").path]
    }

    /// What coordinator `i` answers to `message` (STATUS by default) on a plain DEALER (no redirect
    /// followed; with keys, as "admin"), within `timeout`.
    public func ask(_ i: Int, _ message: WireProtocol.Message = .status(WireStatus()), timeout: Duration = .milliseconds(500)) -> WireProtocol.Message? {
        guard let context = try? Context(), let socket = try? Socket(context, type: .dealer) else { return nil }
        defer { try? socket.set(.linger, 0); socket.close(); try? context.terminate(timeout: .seconds(1)) }
        if let curve = try? clientKeys() { guard (try? socket.useCurveClient(curve)) != nil else { return nil } }
        guard (try? socket.connect(endpoints[i])) != nil,
              (try? socket.sendMultipart(WireCodec.encode(message, requestID: 1))) == true else { return nil }
        let poller = Poller()
        _ = poller.add(socket)
        guard (try? poller.poll(timeout: timeout)) != nil, poller.isReadable(0),
              let frames = try? socket.receiveMultipart(flags: .dontWait), case .success(let e) = WireCodec.decode(frames) else { return nil }
        return e.message
    }

    /// The index of the coordinator that answers STATUS (the leader), waiting up to `timeout` seconds.
    @discardableResult
    public func waitForLeader(timeout: Double = 20, except: Int? = nil) throws -> Int {
        var found: Int?
        try waitUntil("a leader among \(endpoints)", timeout: timeout, interval: .milliseconds(20), logs: logs) {
            for i in endpoints.indices where i != except && processes[i] != nil {
                if case .statusReply? = ask(i, timeout: .milliseconds(200)) { found = i; return true }
            }
            return false
        }
        return found!
    }
}
