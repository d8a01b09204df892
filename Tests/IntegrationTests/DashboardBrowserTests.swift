import ClusterTestSupport
import Foundation
import Testing

/// The dashboard (docs/HTTP.md) in a real headless Chromium, driven by Selenium from
/// scripts/dashboard-browser.py, against real opcoord/opworker processes during a 2,000-op run: the page's
/// counts equal `opctl status --json`'s within a refresh, the DAG and the timeline draw, the op page
/// opens, and screenshots are written to $OPQ_TEST_OUTPUT (else .build/test-output/).
/// Needs Debian's chromium, chromium-driver and python3-selenium (scripts/setup installs them);
/// skipped, saying so, without them.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct DashboardBrowserTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let chromium = ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium"
    static let chromedriver = ProcessInfo.processInfo.environment["CHROMEDRIVER"] ?? "/usr/bin/chromedriver"
    static let python = "/usr/bin/python3"

    /// What is missing for the browser test ("" when nothing is).
    static let missingTools: String = {
        var missing: [String] = []
        if !FileManager.default.isExecutableFile(atPath: chromium) { missing.append("chromium (\(chromium))") }
        if !FileManager.default.isExecutableFile(atPath: chromedriver) { missing.append("chromium-driver (\(chromedriver))") }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: python)
        probe.arguments = ["-c", "import selenium"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        if (try? probe.run()) == nil { missing.append("python3 (\(python))") } else {
            probe.waitUntilExit()
            if probe.terminationStatus != 0 { missing.append("python3-selenium") }
        }
        return missing.joined(separator: ", ")
    }()

    static var outputDirectory: URL {
        if let d = ProcessInfo.processInfo.environment["OPQ_TEST_OUTPUT"], !d.isEmpty { return URL(fileURLWithPath: d) }
        return packageRoot.appendingPathComponent(".build/test-output")
    }

    /// A TCP port nobody listens on now (bound to port 0 and released), for `opcoord --http`.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClusterError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ClusterError("bind/getsockname: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The large run: `layers` × `width` `true` ops, each after two of the layer before (a DAG of
    /// `layers` layers), and `held` ops in the suspended queue "held", so the run stops short of its
    /// end in a state that stays put until the test resumes the queue.
    static func largeGraph(layers: Int, width: Int, held: Int) throws -> Data {
        var ops: [[String: Any]] = []
        for l in 0..<layers {
            for i in 0..<width {
                var op: [String: Any] = ["id": "L\(l)-\(i)", "command": "true"]
                if l > 0 { op["after"] = Array(Set(["L\(l - 1)-\(i)", "L\(l - 1)-\((i + 7) % width)"])).sorted() }
                ops.append(op)
            }
        }
        for i in 0..<held { ops.append(["id": "h\(i)", "command": "true", "queue": "held"]) }
        let graph: [String: Any] = [
            "queues": [["name": "held", "suspended": true, "maxConcurrent": 2, "qos": "utility"]],
            "operations": ops,
        ]
        return try JSONSerialization.data(withJSONObject: graph)
    }

    /// A diamond whose left branch takes longest, so its critical path by duration is a → b → d.
    static let diamond = """
        operations:
          - {id: a, command: "true"}
          - {id: b, command: "sleep 0.5", after: [a]}
          - {id: c, command: "true", after: [a]}
          - {id: d, command: "true", after: [b, c]}
        """

    @Test(.enabled(if: DashboardBrowserTests.missingTools.isEmpty,
                   "the browser test needs chromium, chromium-driver and python3-selenium (scripts/setup installs them); missing: \(DashboardBrowserTests.missingTools)"))
    func dashboardFollowsA2000OpRunInHeadlessChromium() throws {
        let port = try Self.freePort()
        let c = try LocalCluster(coordinatorArgs: ["--http", "127.0.0.1:\(port)"])
        defer { c.stop() }
        try c.startWorker("dash-a", slots: 4, tags: ["ssd"])
        try c.startWorker("dash-b", slots: 4)
        let opctl = Binaries.path("opctl")
        let env = ["OPCOORD": c.endpoint]

        let small = try CommandLineTests.writeGraph(Self.diamond, in: c.dir, name: "diamond.yaml")
        let s = try CommandLineTests.run(opctl, ["submit", small, "--run", "small", "--wait", "--timeout", "60"], env: env)
        try #require(s.status == 0, "\(s.stdout)\(s.stderr)")
        // A second submitter in the same queue: the queue's share row lists both (issue 28).
        let other = try CommandLineTests.run(opctl, ["submit", small, "--run", "small-other", "--wait", "--timeout", "60"],
                                             env: env.merging(["USER": "dash-other"]) { $1 })
        try #require(other.status == 0, "\(other.stdout)\(other.stderr)")

        // A long chain: its collapsed DAG shares boxes between layers (issue 25: 2,000 ops were 2,000 boxes).
        let chainLength = 600
        let chainOps: [[String: Any]] = (0..<chainLength).map { i in
            i == 0 ? ["id": "c0", "command": "true"] : ["id": "c\(i)", "command": "true", "after": ["c\(i - 1)"]]
        }
        let chain = c.dir.appendingPathComponent("chain.json")
        try JSONSerialization.data(withJSONObject: ["operations": chainOps]).write(to: chain)
        let ch = try CommandLineTests.run(opctl, ["submit", chain.path, "--run", "chain"], env: env)
        try #require(ch.status == 0, "\(ch.stdout)\(ch.stderr)")

        let (layers, width, held) = (10, 195, 50)
        let large = c.dir.appendingPathComponent("large.json")
        try Self.largeGraph(layers: layers, width: width, held: held).write(to: large)
        let b = try CommandLineTests.run(opctl, ["submit", large.path, "--run", "big"], env: env)
        try #require(b.status == 0, "\(b.stdout)\(b.stderr)")

        let out = Self.outputDirectory
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let script = Self.packageRoot.appendingPathComponent("scripts/dashboard-browser.py").path
        let r = try CommandLineTests.run(Self.python, [
            script, "--url", "http://127.0.0.1:\(port)/", "--opctl", opctl, "--endpoint", c.endpoint,
            "--big", "big", "--big-total", "\(layers * width + held)", "--held", "held", "--held-count", "\(held)",
            "--small", "small", "--chain", "chain", "--chain-total", "\(chainLength)", "--out", out.path,
            "--shared-queue", "default",
        ], env: env, timeout: 240)
        #expect(r.status == 0, "scripts/dashboard-browser.py:\n\(r.stdout)\(r.stderr)\n\(c.logs())")
        #expect(r.stdout.contains("dashboard: every check passed"), "\(r.stdout)")

        let png = try Data(contentsOf: out.appendingPathComponent("dashboard.png"))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "dashboard.png is a PNG")
        #expect(png.count > 10_000, "dashboard.png has content (\(png.count) bytes)")
    }
}
