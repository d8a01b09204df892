import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization

/// A real etcd (Debian's etcd-server, installed by scripts/setup) on loopback for the leadership
/// tests: free ports, a temporary data directory, a bounded wait for health; `stop()` (also on deinit)
/// kills it by PID and removes the directory. Its heartbeat and election timeout are short so its
/// minimum lease TTL is 1 s (etcd's floor is 1.5 × its election timeout, rounded up to whole seconds).
public final class EtcdServer: @unchecked Sendable {
    public let clientURL: String
    public let dir: URL
    public private(set) var process: Process
    private let args: [String]
    private var stopped = false

    /// The etcd binary: $OPQ_ETCD, else `etcd` on the PATH; nil when there is none.
    public static var binary: String? {
        if let e = ProcessInfo.processInfo.environment["OPQ_ETCD"], !e.isEmpty { return e }
        for d in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(d)/etcd"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    public init() throws {
        guard let binary = Self.binary else {
            throw ClusterError("etcd is not installed: the leadership tests need a real etcd (Debian's etcd-server); run scripts/setup")
        }
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("opq-etcd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let client = try freeLoopbackPort(), peer = try freeLoopbackPort()
        clientURL = "http://127.0.0.1:\(client)"
        args = ["--name", "opq-test", "--data-dir", dir.appendingPathComponent("data").path,
                "--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
                "--listen-peer-urls", "http://127.0.0.1:\(peer)",
                "--initial-advertise-peer-urls", "http://127.0.0.1:\(peer)",
                "--initial-cluster", "opq-test=http://127.0.0.1:\(peer)",
                "--heartbeat-interval", "50", "--election-timeout", "500"]
        process = try LocalCluster.launch(executable: binary, args, log: dir.appendingPathComponent("etcd.log"))
        try waitHealthy()
    }

    deinit { stop() }

    public var log: String { (try? String(contentsOf: dir.appendingPathComponent("etcd.log"), encoding: .utf8)) ?? "" }

    /// Kills it (SIGKILL: the test is about what happens when the store is gone), keeping the data.
    public func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Starts it again on the same ports and data (after `kill`).
    public func restart() throws {
        process = try LocalCluster.launch(executable: Self.binary!, args, log: dir.appendingPathComponent("etcd.log"))
        try waitHealthy()
    }

    public func stop() {
        guard !stopped else { return }
        stopped = true
        if process.isRunning { kill() }
        try? FileManager.default.removeItem(at: dir)
    }

    private func waitHealthy() throws {
        let p = process
        try waitUntil("etcd to answer /health on \(clientURL)", timeout: 20, interval: .milliseconds(50), logs: { self.log }) {
            guard p.isRunning else { throw ClusterError("etcd exited (status \(p.terminationStatus)):\n\(self.log)") }
            return Self.healthy(clientURL)
        }
    }

    /// GET /health answers {"health":"true"} (a plain blocking request: this is test support).
    static func healthy(_ base: String) -> Bool {
        guard let url = URL(string: base + "/health") else { return false }
        let done = DispatchSemaphore(value: 0)
        let ok = Mutex(false)
        var request = URLRequest(url: url)
        request.timeoutInterval = 1
        URLSession.shared.dataTask(with: request) { data, _, _ in
            if let data, String(decoding: data, as: UTF8.self).contains("\"true\"") { ok.withLock { $0 = true } }
            done.signal()
        }.resume()
        _ = done.wait(timeout: .now() + 2)
        return ok.withLock { $0 }
    }
}

/// A TCP port free on 127.0.0.1 now (bound to port 0, read back, closed).
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ClusterError("socket: \(errno)") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard bound else { throw ClusterError("bind/getsockname on 127.0.0.1:0 failed: \(errno)") }
    return Int(UInt16(bigEndian: addr.sin_port))
}
