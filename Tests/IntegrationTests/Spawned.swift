import ClusterTestSupport
import Foundation

/// A program running in the background, output to files; `finish` waits for it, bounded.
final class Spawned {
    let process = Process()
    private let exited = DispatchSemaphore(value: 0)
    private let dir: URL
    private let started = ContinuousClock.now
    private(set) var elapsed: Duration = .zero

    init(_ path: String, _ args: [String], env: [String: String]) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-spawn-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for name in ["stdout", "stderr"] { _ = FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: nil) }
        // Through env(1), which execs the program (same pid) with signals at their defaults: the test runner
        // may ignore signals, and a shell cannot trap a signal ignored when it started (scripts rely on traps).
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal=TERM,INT,HUP,PIPE", path] + args
        process.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: dir.appendingPathComponent("stdout"))
        process.standardError = try FileHandle(forWritingTo: dir.appendingPathComponent("stderr"))
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: dir)
    }

    /// Waits until the program has a TCP connection to the cluster's coordinator that the coordinator
    /// has accepted (from /proc: the program's socket inodes in the kernel's TCP table, and the other
    /// end owned by a process): it is talking to that coordinator, so what happens to the coordinator
    /// next happens to a client that was connected to it.
    func waitUntilConnected(to cluster: LocalCluster, timeout: Double = 20) throws {
        let port = Int(cluster.endpoint.split(separator: ":").last ?? "") ?? -1
        try cluster.waitUntil("opctl connected to port \(port)", timeout: timeout) {
            guard process.isRunning else { throw ClusterError("opctl exited early: \(output("stdout"))\(output("stderr"))") }
            return Self.hasConnection(pid: process.processIdentifier, toPort: port)
        }
    }

    /// Waits for the exit (SIGTERM, then SIGKILL, after `timeout` seconds).
    func finish(timeout: Double) -> CommandLineTests.Run {
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGTERM)
            if exited.wait(timeout: .now() + 3) == .timedOut { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        elapsed = ContinuousClock.now - started
        return CommandLineTests.Run(status: process.terminationStatus, stdout: output("stdout"), stderr: output("stderr"))
    }

    /// What the program wrote to "stdout" or "stderr" so far.
    func output(_ name: String) -> String {
        (try? String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    static func hasConnection(pid: Int32, toPort port: Int) -> Bool {
        let fdDir = "/proc/\(pid)/fd"
        var inodes = Set<Substring>()
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: fdDir)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDir)/\(fd)"),
                  target.hasPrefix("socket:[") else { continue }
            inodes.insert(Substring(target.dropFirst(8).dropLast()))
        }
        func portOf(_ address: Substring) -> Int? {
            address.lastIndex(of: ":").flatMap { Int(address[address.index(after: $0)...], radix: 16) }
        }
        // procfs files report size 0: read to the end, not by size.
        let data: Data = FileHandle(forReadingAtPath: "/proc/net/tcp")?.readDataToEndOfFile() ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        var rows: [[Substring]] = []
        for line in text.split(separator: "\n").dropFirst() {
            let f: [Substring] = line.split(separator: " ")
            if f.count > 9 && f[3] == "01" { rows.append(f) }
        }
        for mine in rows where inodes.contains(mine[9]) && portOf(mine[2]) == port {
            // The coordinator's end: an inode of 0 means still in the listen backlog, not accepted.
            for other in rows where other[1] == mine[2] && other[2] == mine[1] && other[9] != "0" { return true }
        }
        return false
    }
}
