import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// Nothing keeps running that nobody owns: a `shell` operation's processes die with their worker,
/// even when the worker is killed with SIGKILL (docs/HANDLERS.md, "The process group dies with the worker").
@Suite(.serialized, .timeLimit(.minutes(2)))
struct OrphanTests {
    @Test func aKilledWorkersShellProcessesDieWithItAndFinishNothing() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let worker = try c.startWorker("victim", slots: 1)
        let dir = c.dir.appendingPathComponent("orphan").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let pidFile = dir + "/pid", marker = dir + "/MARKER"
        // The pid is written atomically (rename), so it is never read half-written. The command then
        // lives on (exec sleep 60), so an orphaned group would still be there after the 5 s bound below.
        var o = shell("orphan", "echo $$ > \(pidFile).new && mv \(pidFile).new \(pidFile); sleep 2; touch \(marker); exec sleep 60")
        o.lossRetries = 0
        #expect(try c.submit([o]).accepted)

        var pid: Int32 = 0
        try c.waitUntil("the command started", timeout: 20) {
            pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            return pid > 0
        }
        let pgid = try #require(Self.processGroup(of: pid))
        #expect(pgid == pid, "the command leads its own process group")
        // Should the test fail, it leaves no orphan behind either.
        defer { if !Self.liveMembers(of: pgid).isEmpty { kill(-pgid, SIGKILL) } }
        #expect(!Self.liveMembers(of: pgid).isEmpty)

        c.signal("victim", SIGKILL)
        try c.waitUntil("the worker exited", timeout: 5) { !worker.isRunning }
        try c.waitUntil("process group \(pgid) gone", timeout: 5) { Self.liveMembers(of: pgid).isEmpty }

        // Not a sleep: every process of the command's group is gone (above), so nobody is left who could
        // write the marker; if it is not there now, the command never finished its work, and never will.
        #expect(!FileManager.default.fileExists(atPath: marker), "the orphaned command finished its work")

        // With no loss retry, the operation is reported failed: now that is also what happened.
        try c.wait(["orphan"], timeout: 15)
        let st = try #require(try c.status(["orphan"])["orphan"])
        #expect(st.outcome.failed.hasPrefix("worker lost"), "\(st.outcome)")
    }

    /// The process group of `pid`, from /proc (nil once it is gone).
    static func processGroup(of pid: Int32) -> Int32? {
        stat(of: "\(pid)").map(\.pgrp)
    }

    /// Processes of group `pgid` that are not zombies (a killed process stays a zombie until its
    /// new parent, PID 1, reaps it; it runs nothing).
    static func liveMembers(of pgid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let pid = Int32(entry), let s = stat(of: entry), s.pgrp == pgid, s.state != "Z", s.state != "X" else { return nil }
            return pid
        }
    }

    /// State and process group from /proc/PID/stat: "pid (comm) state ppid pgrp …" (comm may hold spaces or parentheses).
    static func stat(of pid: String) -> (state: Character, pgrp: Int32)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 2, let state = fields[0].first, let pgrp = Int32(fields[2]) else { return nil }
        return (state, pgrp)
    }
}
