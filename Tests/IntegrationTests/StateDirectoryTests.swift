import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// A5 at the process level: what opcoord does with a damaged, torn or full state directory
/// (docs/DEPLOY.md, "State directory"). The journal's own format tests are in Tests/JournalTests.
@Suite(.serialized) struct StateDirectoryTests {
    /// Submits `batches` SUBMITs of `perBatch` noop ops into run "j" and returns the acknowledged ids.
    private func submitAcknowledged(_ c: LocalCluster, batches: Int, perBatch: Int, payload: String = "") throws -> [String] {
        var ids: [String] = []
        for b in 0..<batches {
            let ops = (0..<perBatch).map { op("b\(b)-\($0)", payload: payload, queue: "j") }
            #expect(try c.submit(ops, run: "j").accepted)
            ids += ops.map { "j/" + $0.id }
        }
        return ids
    }

    private func segments(_ c: LocalCluster) throws -> [String] {
        let dir = try #require(c.stateDirectory)
        return try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("journal-") }.sorted().map { dir + "/" + $0 }
    }

    private func log(_ c: LocalCluster, start: Int) -> String {
        (try? String(contentsOf: c.dir.appendingPathComponent("opcoord-\(start).log"), encoding: .utf8)) ?? ""
    }

    private func known(_ c: LocalCluster, _ ids: [String]) throws -> Set<String> {
        var found = Set<String>()
        for start in stride(from: 0, to: ids.count, by: 4096) {
            for (_, s) in try c.status(Array(ids[start..<min(ids.count, start + 4096)])) where s.state != .unspecified {
                found.insert(s.run.isEmpty ? s.id : s.run + "/" + s.id)
            }
        }
        return found
    }

    @Test func aDamagedJournalStopsTheStartNamingTheFileAndSalvageKeepsWhatCameBefore() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let ids = try submitAcknowledged(c, batches: 6, perBatch: 50)
        var damaged = ""
        try c.restartCoordinator(crash: true) {
            damaged = try #require(try segments(c).last)
            let h = try #require(FileHandle(forUpdatingAtPath: damaged))
            let size = try h.seekToEnd()
            try h.seek(toOffset: size / 2)
            let byte = try #require(try h.read(upToCount: 1)?.first)
            try h.seek(toOffset: size / 2)
            try h.write(contentsOf: [byte ^ 0x5A])
            try h.close()
        }
        try c.waitUntil("opcoord refuses the damaged journal", timeout: 20) { !c.coordinator.isRunning }
        #expect(c.coordinator.terminationStatus != 0)
        let refusal = log(c, start: 2)
        #expect(refusal.contains("journal file \(damaged) is damaged at offset"), "\(refusal)")
        #expect(refusal.contains("--salvage"), "\(refusal)")

        try c.restartCoordinator(extraArgs: ["--salvage"])
        try c.waitUntil("the salvaging coordinator answers", timeout: 20) { (try? c.statusReply()) != nil }
        let kept = try known(c, ids)
        #expect(!kept.isEmpty && kept.count < ids.count, "kept \(kept.count) of \(ids.count)")
        // What was kept is a prefix: everything submitted before the damaged record.
        #expect(Set(ids.prefix(kept.count)) == kept)
        #expect(log(c, start: 3).contains("salvaged"), "\(log(c, start: 3))")
    }

    /// Snapshots through the coordinator: with a tiny threshold it snapshots while work runs; killed and
    /// restarted, it recovers from the newest snapshot plus the segments after it: every op with its
    /// outcome and result, a suspended queue still suspended, its op still waiting.
    @Test func aSnapshotAndItsTailRecoverEveryOperationWithItsOutcome() throws {
        let c = try LocalCluster(coordinatorArgs: ["--snapshot-bytes", "2000"])
        defer { c.stop() }
        try c.startWorker("s", slots: 2)
        #expect(try c.submit([op("held", queue: "held")], queues: [queueSettings("held", suspended: true)], run: "j").accepted)
        var ids: [String] = []
        for b in 0..<8 {
            let ops = (0..<20).map { op("s\(b)-\($0)", kind: "echo", payload: "r\(b)-\($0)", queue: "j") }
            #expect(try c.submit(ops, run: "j").accepted)
            ids += ops.map(\.id)
            try c.wait(ops.map(\.id))
        }
        let dir = try #require(c.stateDirectory)
        try c.waitUntil("a snapshot was written", timeout: 20) {
            try FileManager.default.contentsOfDirectory(atPath: dir).contains { $0.hasSuffix(".snap") }
        }
        try c.restartCoordinator(crash: true)
        try c.waitUntil("the restarted coordinator answers", timeout: 20) { (try? c.statusReply()) != nil }
        let start = log(c, start: 2)
        let replayed = try #require(start.split(separator: "\n").first { $0.contains("replayed in") }, "\(start)")
        #expect(!replayed.contains(": 0 snapshot"), "recovered from a snapshot: \(replayed)")
        let st = try c.status(ids.map { "j/" + $0 }, withResults: true)
        let wrong = ids.filter { id in
            let expected = "r" + id.dropFirst()   // s3-7 → r3-7
            return st[id]?.succeededResult != String(expected)
        }
        #expect(wrong.isEmpty, "\(wrong.count) ops without their outcome: \(wrong.prefix(5))")
        #expect(try c.status(["j/held"])["held"]?.state == .ready)
        #expect(try c.statusReply().queues.first { $0.name == "held" }?.suspended == true)
    }

    @Test func aTornTailIsTruncatedAndEveryAcknowledgedOperationSurvives() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let ids = try submitAcknowledged(c, batches: 3, perBatch: 100)
        try c.restartCoordinator(crash: true) {
            // A write cut short by the crash: a record header whose payload never made it.
            let last = try #require(try segments(c).last)
            let h = try #require(FileHandle(forWritingAtPath: last))
            try h.seekToEnd()
            let length: UInt32 = 300
            var bytes: [UInt8] = []
            for v in [length, ~length, 0x1234_5678] { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
            try h.write(contentsOf: bytes + [1, 2, 3])
            try h.close()
        }
        try c.waitUntil("the restarted coordinator answers", timeout: 20) { (try? c.statusReply()) != nil }
        #expect(try known(c, ids).count == ids.count)
        #expect(log(c, start: 2).contains("torn tail"), "\(log(c, start: 2))")
        // It goes on writing (into a new segment, never after the truncated tail).
        #expect(try c.submit([op("after", queue: "j")], run: "j").accepted)
    }

    /// The state directory on a small tmpfs that fills up: a change is refused with BUSY while reads go
    /// on, the change that hit the full disk is acknowledged once space returns, and after a crash
    /// every acknowledged operation is there. Needs root (mount); skipped otherwise.
    @Test func aFullDiskRefusesChangesKeepsReadsAndRecoversByItself() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("opq-full-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=2m", "tmpfs", base.path]
        mount.standardError = FileHandle.nullDevice
        guard (try? mount.run()) != nil else { print("skipped: cannot run mount"); return }
        mount.waitUntilExit()
        guard mount.terminationStatus == 0 else { print("skipped: mounting a tmpfs needs root"); return }
        defer {
            let u = Process()
            u.executableURL = URL(fileURLWithPath: "/bin/umount")
            u.arguments = ["-l", base.path]
            try? u.run()
            u.waitUntilExit()
        }
        // Leave ~400 KiB of the 2 MiB: a filler file takes the rest and is removed to give space back.
        let filler = base.appendingPathComponent("filler").path
        #expect(FileManager.default.createFile(atPath: filler, contents: Data(count: 1_600_000)))
        let c = try LocalCluster(stateDirectory: base.appendingPathComponent("state").path)
        defer { c.stop() }
        let payload = String(repeating: "p", count: 2000)
        var acknowledged: [String] = []
        var held: [String] = []
        var refusal = ""
        for b in 0..<40 where refusal.isEmpty {
            let ops = (0..<50).map { op("b\(b)-\($0)", payload: payload, queue: "j") }
            var s = WireSubmit()
            s.operations = ops
            s.run = "j"
            s.append = true
            do {
                let reply = try c.connect(timeout: .seconds(2)).request(.submit(s))
                guard case .submitReply(let r) = reply, r.accepted else { Issue.record("\(reply)"); return }
                acknowledged += ops.map { "j/" + $0.id }
            } catch ClientError.timeout {
                held += ops.map { "j/" + $0.id }   // accepted in memory, its reply waits for the disk
            } catch ClientError.server(let code, let text) {
                #expect(code == .busy)
                refusal = text
            }
        }
        #expect(refusal.contains("journal unavailable"), "\(refusal)")
        #expect(refusal.contains("nothing was changed"), "\(refusal)")
        #expect((try? c.statusReply()) != nil, "reads go on while the disk is full")

        try FileManager.default.removeItem(atPath: filler)
        try c.waitUntil("changes are accepted again", timeout: 20) {
            var s = WireSubmit()
            s.operations = [op("after-\(UUID().uuidString.prefix(6))", queue: "j")]
            s.run = "j"
            s.append = true
            guard case .submitReply(let r)? = try? c.connect(timeout: .seconds(2)).request(.submit(s)) else { return false }
            return r.accepted
        }
        try c.restartCoordinator(crash: true)
        try c.waitUntil("the restarted coordinator answers", timeout: 20) { (try? c.statusReply()) != nil }
        let all = acknowledged + held
        #expect(try known(c, all).count == all.count, "acknowledged \(acknowledged.count), held \(held.count)")
    }
}
