import Foundation
import OpSpec
import Testing
@testable import WorkerRuntime

/// Cancelling running parts through the local queue, as a coordinator's CANCEL does.
@Suite struct CancellationTests {
    @Test func runningSleepObservesCancelFast() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let p = part("s", "sleep", bytes("60000"))
        queue.submit(p)
        try await recorder.waitStarted(p.key)
        let start = monotonicNow()
        #expect(queue.cancel(opID: "s", reason: "cancelled by client") == 1)
        let result = try await recorder.waitFinished(p.key, timeout: .seconds(5))
        let elapsed = monotonicNow() - start
        #expect(result == .cancelled("cancelled by client"))
        // Microseconds when the machine is idle (opbench: p50 3 µs); the bound allows for a test run
        // sharing two cores with other builds.
        #expect(elapsed < .seconds(1), "cancel took \(elapsed)")
    }

    @Test func runningBurnObservesCancelFast() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let p = part("b", "burn", bytes("60000"))
        queue.submit(p)
        try await recorder.waitStarted(p.key)
        let start = monotonicNow()
        #expect(queue.cancel(opID: "b", reason: "cancelled by client") == 1)
        let result = try await recorder.waitFinished(p.key, timeout: .seconds(5))
        let elapsed = monotonicNow() - start
        #expect(result == .cancelled("cancelled by client"))
        // It checks every few µs; the bound allows for a loaded machine, and is far below 60 s.
        #expect(elapsed < .seconds(1), "cancel took \(elapsed)")
    }

    @Test func cancelReachesTaskCancellationAndBack() async throws {
        let recorder = EventRecorder()
        var registry = HandlerRegistry()
        // Waits only on Swift task cancellation, never looks at the context.
        registry.register(kind: "waitForTaskCancel") { _ in
            try await Task.sleep(for: .seconds(60))
            return []
        }
        let queue = LocalOperationQueue(slots: 1, registry: registry, eventSink: recorder.sink)
        let p = part("t", "waitForTaskCancel")
        queue.submit(p)
        try await recorder.waitStarted(p.key)
        queue.cancel(opID: "t", attempt: 1, reason: "timeout")
        #expect(try await recorder.waitFinished(p.key) == .cancelled("timeout"))
    }

    @Test func cancelOfAnotherAttemptIsIgnored() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let p = part("a", "sleep", bytes("60000"), attempt: 2)
        queue.submit(p)
        try await recorder.waitStarted(p.key)
        #expect(queue.cancel(opID: "a", attempt: 1, reason: "stale") == 0)
        #expect(queue.runningCount == 1)
        queue.cancel(opID: "a", attempt: 2, reason: "now")
        #expect(try await recorder.waitFinished(p.key) == .cancelled("now"))
    }

    /// A child that exits on SIGTERM: cancelled well within the grace period, group gone.
    @Test func shellChildExitingOnSIGTERM() async throws {
        let (result, elapsed, pgid) = try await cancelShell("sleep 60", grace: 5)
        #expect(result == .cancelled("cancelled by client"))
        // Well under the 5 s grace (SIGTERM, not SIGKILL, ended it), with room for a loaded machine.
        #expect(elapsed < .seconds(4), "took \(elapsed)")
        #expect(await groupGone(pgid))
        #expect(!processAlive(pgid))
    }

    /// A child that ignores SIGTERM (and so does its own child): killed after the grace period.
    @Test func shellChildIgnoringSIGTERMIsKilledAfterGrace() async throws {
        let (result, elapsed, pgid) = try await cancelShell("trap '' TERM; touch \"$READY\"; sleep 60; echo survived", grace: 0.3,
                                                            waitForReadyFile: true)
        #expect(result == .cancelled("cancelled by client"))
        #expect(elapsed >= .milliseconds(250), "SIGKILL came before the grace period: \(elapsed)")
        // Killed, not waited out (the child sleeps 60 s); the bound leaves room for the rest of the suite
        // loading both cores at once (3.5 s was seen while the load tests ran alongside).
        #expect(elapsed < .seconds(10), "took \(elapsed)")
        #expect(await groupGone(pgid))
    }

    /// The leader dies on SIGTERM but leaves a grandchild that ignores it: swept after the run.
    @Test func grandchildIgnoringSIGTERMIsSwept() async throws {
        let (result, _, pgid) = try await cancelShell("(trap '' TERM; touch \"$READY\"; exec sleep 60) & wait", grace: 5,
                                                      waitForReadyFile: true)
        #expect(result == .cancelled("cancelled by client"))
        #expect(await groupGone(pgid))
    }

    func cancelShell(_ script: String, grace: Double, waitForReadyFile: Bool = false) async throws
        -> (OperationOutcome, Duration, Int32)
    {
        let ready = FileManager.default.temporaryDirectory.appendingPathComponent("opq-ready-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: ready) }
        let pids = Recorded<Int32>()
        let registry = HandlerRegistry(shell: ShellHandler(onSpawn: { _, pid in pids.append(pid) }))
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, registry: registry, eventSink: recorder.sink)
        let p = part("sh", "shell", ShellCommand.script(script, env: ["READY": ready], grace: grace).encoded())
        queue.submit(p)
        try await recorder.waitStarted(p.key)
        if waitForReadyFile {
            // The trap must be in place before SIGTERM; poll the file the script touches (bounded).
            try await withTimeout(.seconds(5), "the child to get ready") {
                while !FileManager.default.fileExists(atPath: ready) { try await Task.sleep(for: .milliseconds(5)) }
            }
        } else {
            try await withTimeout(.seconds(5), "the child to spawn") {
                while pids.values.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
            }
        }
        let pgid = try #require(pids.values.first)
        #expect(processAlive(pgid))
        let start = monotonicNow()
        queue.cancel(opID: "sh", reason: "cancelled by client")
        let result = try await recorder.waitFinished(p.key, timeout: .seconds(10))
        return (result, monotonicNow() - start, pgid)
    }
}
