import ClusterTestSupport
import Foundation
import OpClient
import Testing

/// `opctl watch` on a real 80 × 24 terminal (a tmux pane): it fits, shows a run's counts, rate, ETA and
/// elapsed time, marks a coordinator that went away instead of freezing, and recovers when it is back.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct WatchTerminalTests {
    @Test(.enabled(if: Tmux.path != nil, "tmux is not installed (scripts/setup installs it): skipping the terminal test of opctl watch"))
    func watchFitsAn80x24TerminalMarksALostCoordinatorAndRecovers() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 4)
        let tmux = try Tmux(width: 80, height: 24,
                            command: [Binaries.path("opctl"), "watch", "--interval", "0.2", "--coordinator", c.endpoint])
        defer { tmux.close() }

        // 40 ops of 250 ms on 4 slots: about 2.5 s of steady progress.
        #expect(try c.submit((0..<40).map { op("s\($0)", kind: "sleep", payload: "250") }, run: "tmuxrun").accepted)
        var screen: [String] = []
        // The run's row: counts, a rate (a number once a second of samples is in), an ETA and the elapsed time.
        let row = #/^tmuxrun +\[[#-]+\] +\d+/40 +\d+ +\d+ +\d+ +\d+ +\d+ +\d+(\.\d)?/s +(\d+s|done) +\d+\.\ds$/#
        try c.waitUntil("the run's row with a rate, an ETA and the elapsed time", timeout: 30) {
            screen = try tmux.capture()
            return screen.contains { $0.wholeMatch(of: row) != nil }
        }
        #expect(screen.first?.hasPrefix("opctl watch  \(c.endpoint)") == true, "\(screen)")
        #expect(screen.contains { $0.hasPrefix("QUEUE ") && $0.hasSuffix("RATE    ETA ELAPSED") }, "\(screen)")
        #expect(screen.contains { $0.hasPrefix("workers: w1 a: ") }, "\(screen)")
        try c.waitUntil("the run finished on screen", timeout: 30) {
            screen = try tmux.capture()
            return screen.contains { $0.hasPrefix("tmuxrun ") && $0.contains("40/40") && $0.contains(" done ") }
        }
        Self.expectFits(screen)

        // The coordinator stops (its PID, SIGTERM): the view says so within a few seconds, counting up.
        try c.restartCoordinator {
            try c.waitUntil("the pane shows the disconnected marker", timeout: 15) {
                screen = try tmux.capture()
                return screen.first?.hasPrefix("disconnected, retrying… (since ") == true
            }
            Self.expectFits(screen)
            #expect(screen.contains { $0.hasPrefix("tmuxrun ") && $0.contains("40/40") }, "the last data stays: \(screen)")
        }
        // Back (same state directory): live again, with the run as it was.
        try c.waitUntil("the pane recovers", timeout: 30) {
            screen = try tmux.capture()
            return screen.first?.hasPrefix("opctl watch  ") == true && screen.contains { $0.contains("coordinator back after") }
                && screen.contains { $0.hasPrefix("tmuxrun ") && $0.contains("40/40") }
        }
        Self.expectFits(screen)
    }

    /// At most 23 lines (the cursor's line stays on screen) and none wider than 80 columns.
    static func expectFits(_ screen: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let drawn = screen.lastIndex { !$0.isEmpty }.map { $0 + 1 } ?? 0
        #expect(drawn <= 23, "\(drawn) lines: \(screen)", sourceLocation: sourceLocation)
        for line in screen {
            #expect(TerminalText.width(line) <= 80, "wider than 80: \(line)", sourceLocation: sourceLocation)
        }
    }
}

/// A detached tmux session on a server of its own (`-S`, a socket in the temporary directory), running one command in a pane of a fixed size.
/// tmux's output goes to a file, not a pipe: its server, forked from the first call, would hold a pipe
/// open and a read to its end would never return.
struct Tmux {
    static let path: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }
    let socket = FileManager.default.temporaryDirectory.appendingPathComponent("opq-watch-\(UUID().uuidString.prefix(8)).tmux").path
    /// The pane's process: the command itself (env execs it).
    private(set) var panePID: Int32 = 0

    init(width: Int, height: Int, command: [String]) throws {
        // The pane stays after the command ends, so what it said last can be read.
        let line = (["env", "LANG=C.UTF-8"] + command).joined(separator: " ")
        try run(["start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
                 "new-session", "-d", "-x", "\(width)", "-y", "\(height)", "-s", "t", line])
        let pid = try run(["display-message", "-p", "-t", "t", "#{pane_pid}"]).trimmingCharacters(in: .whitespacesAndNewlines)
        panePID = Int32(pid) ?? 0
    }

    /// The pane's lines, wrapped lines joined (so a line wider than the pane shows as one).
    func capture() throws -> [String] {
        try run(["capture-pane", "-p", "-J", "-t", "t"]).components(separatedBy: "\n").dropLast().map { $0 }
    }

    /// Ends the command (by its PID) and this server (only ours: its own socket).
    func close() {
        if panePID > 0 { kill(panePID, SIGTERM) }
        _ = try? run(["kill-server"])
        try? FileManager.default.removeItem(atPath: socket)
    }

    /// Runs the tmux client with `args`; its output. Spawned with no signal blocked and every signal at
    /// its default: the test runner's threads block most signals, and a tmux server that inherited that
    /// mask never hears of its children's end (kill-server would hang, and so would waiting for it).
    @discardableResult
    func run(_ args: [String]) throws -> String {
        let file = URL(fileURLWithPath: "\(socket)-\(UUID().uuidString.prefix(8)).out")
        defer { try? FileManager.default.removeItem(at: file) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env["TMUX"] = nil
        let argv = [Self.path!, "-u", "-S", socket] + args
        let envp = env.map { "\($0.key)=\($0.value)" }
        var cArgs = argv.map { strdup($0) } + [nil]
        var cEnv = envp.map { strdup($0) } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, Self.path!, &actions, &attributes, &cArgs, &cEnv)
        guard rc == 0 else { throw ClusterError("tmux could not start: \(String(cString: strerror(rc)))") }
        // Bounded: a tmux client returns at once.
        var status: Int32 = 0
        do {
            try waitUntil("tmux \(args.joined(separator: " ")) to return", timeout: 20, interval: .milliseconds(5)) {
                waitpid(pid, &status, WNOHANG) != 0
            }
        } catch {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            throw error
        }
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        guard status == 0 else { throw ClusterError("tmux \(args.joined(separator: " ")) (status \(status)): \(text)") }
        return text
    }
}
