import Foundation
import OpSpec
import Synchronization
import Testing
@testable import WorkerRuntime

@Suite struct LocalQueueTests {
    func startedOrder(_ events: [WorkerEvent]) -> [String] {
        events.compactMap { if case .started(let key) = $0 { key.opID } else { nil } }
    }

    @Test func onOneSlotPartsStartInPriorityOrderFIFOWithinALevel() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let levels: [OperationPriority] = [.low, .veryHigh, .normal, .veryLow, .high]
        var parts: [DispatchedPart] = []
        for round in 0..<3 {
            for level in levels { parts.append(part("\(level.name)-\(round)", "noop", priority: level)) }
        }
        queue.submit(contentsOf: parts)
        let total = parts.count
        let events = try await recorder.wait("all to finish") { events in
            events.filter { if case .finished = $0 { true } else { false } }.count == total
        }
        let expected = OperationPriority.allCases.reversed().flatMap { level in (0..<3).map { "\(level.name)-\($0)" } }
        #expect(startedOrder(events) == expected)
    }

    @Test func qosBreaksTiesWithinAPriority() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        queue.submit(contentsOf: [
            part("bg", "noop", qos: .background), part("def", "noop"), part("ui", "noop", qos: .userInteractive),
            part("hi-bg", "noop", priority: .high, qos: .background),
        ])
        let events = try await recorder.wait("all to finish") { $0.count == 8 }
        #expect(startedOrder(events) == ["hi-bg", "ui", "def", "bg"])
    }

    @Test func laterHighPriorityOvertakesWaitingLowPriority() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let blocker = part("blocker", "sleep", bytes("60000"))
        queue.submit(blocker)
        try await recorder.waitStarted(blocker.key)
        queue.submit(part("low", "noop", priority: .low))
        queue.submit(part("high", "noop", priority: .high))
        #expect(queue.waitingCount == 2 && queue.freeSlots == 0)
        queue.cancel(opID: "blocker", reason: "done")
        let events = try await recorder.wait("all to finish") { $0.filter { if case .finished = $0 { true } else { false } }.count == 3 }
        #expect(startedOrder(events) == ["blocker", "high", "low"])
    }

    @Test func slotLimitIsNeverExceeded() async throws {
        let running = Mutex((now: 0, peak: 0))
        var registry = HandlerRegistry()
        registry.register(kind: "measure") { context in
            running.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
            try await Task.sleep(for: .milliseconds(Int(context.payload.first ?? 1)))
            running.withLock { $0.now -= 1 }
            return []
        }
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 3, registry: registry, eventSink: recorder.sink)
        queue.submit(contentsOf: (0..<30).map { part("m\($0)", "measure", [UInt8(1 + $0 % 7)]) })
        let events = try await recorder.wait("all to finish", timeout: .seconds(20)) {
            $0.filter { if case .finished = $0 { true } else { false } }.count == 30
        }
        // By the handlers' own count and by the order of events.
        #expect(running.withLock { $0.peak } == 3)
        var open = 0, peak = 0
        for event in events {
            if case .started = event { open += 1; peak = max(peak, open) }
            if case .finished = event { open -= 1 }
        }
        #expect(peak == 3)
    }

    @Test func cancelWaitingFinishesWithoutRunning() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let running = part("run", "sleep", bytes("60000"))
        let waiting = part("wait", "echo", bytes("never"))
        queue.submit(running)
        queue.submit(waiting)
        try await recorder.waitStarted(running.key)
        #expect(queue.cancel(opID: "wait", reason: "not needed") == 1)
        #expect(try await recorder.waitFinished(waiting.key) == .cancelled("not needed"))
        #expect(queue.runningCount == 1 && queue.waitingCount == 0)
        queue.cancel(opID: "run", reason: "stop")
        #expect(try await recorder.waitFinished(running.key) == .cancelled("stop"))
        try await withTimeout(.seconds(5), "idle") { await queue.waitUntilIdle() }
        #expect(!recorder.events.contains(.started(waiting.key)))
    }

    @Test func unknownKindFailsListingTheKinds() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let p = part("u", "resize")
        queue.submit(p)
        #expect(try await recorder.waitFinished(p.key)
                    == .failed("unknown handler kind \"resize\"; this worker has: burn, echo, fail, noop, shell, sleep"))
        #expect(!recorder.events.contains(.started(p.key)))
    }

    @Test func outcomesAndProgressAreReported() async throws {
        var registry = HandlerRegistry()
        registry.register(kind: "steps") { context in
            context.reportProgress(0.5, message: "half")
            return context.inputs["dep"] ?? []
        }
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 2, registry: registry, eventSink: recorder.sink)
        let steps = part("p", "steps", inputs: [.init(id: "dep", result: bytes("from dep"))])
        let failing = part("f", "fail", bytes("broken"))
        queue.submit(contentsOf: [steps, failing])
        #expect(try await recorder.waitFinished(steps.key) == .succeeded(bytes("from dep")))
        #expect(try await recorder.waitFinished(failing.key) == .failed("broken"))
        let events = recorder.events.filter { $0.key == steps.key }
        #expect(events == [.started(steps.key), .progress(steps.key, fraction: 0.5, message: "half"),
                           .finished(steps.key, .succeeded(bytes("from dep")))])
    }

    @Test func duplicateDispatchIsIgnoredAndShutdownCancelsAll() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, eventSink: recorder.sink)
        let a = part("a", "sleep", bytes("60000"))
        queue.submit(contentsOf: [a, a, part("b", "noop")])
        try await recorder.waitStarted(a.key)
        #expect(queue.waitingCount == 1)
        try await withTimeout(.seconds(5), "shutdown") { await queue.shutdown(reason: "bye") }
        let finished = recorder.events.filter { if case .finished = $0 { true } else { false } }
        #expect(finished.count == 2)
        #expect(finished.allSatisfy { if case .finished(_, .cancelled("bye"), _) = $0 { true } else { false } })
    }

    /// 100,000 noop parts on one slot, in priority order (the scheduler's hot path).
    @Test func manyNoopsRunInPriorityOrder() async throws {
        let count = 100_000
        let order = Mutex<[Int32]>([])
        let done = Mutex(0)
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1) { event in
            switch event {
            case .started(let key): order.withLock { $0.append(Int32(key.part)) }
            case .finished:
                if done.withLock({ $0 += 1; return $0 }) == count { recorder.append(event) }
            case .progress: break
            }
        }
        let levels = OperationPriority.allCases
        queue.submit(contentsOf: (0..<count).map { i in
            DispatchedPart(key: PartKey(opID: "n", part: i), kind: "noop", priority: levels[i % levels.count])
        })
        try await recorder.wait("100,000 noops", timeout: .seconds(60)) { !$0.isEmpty }
        let started = order.withLock { $0 }
        #expect(started.count == count)
        let priorities = started.map { levels[Int($0) % levels.count].rawValue }
        #expect(priorities == priorities.sorted(by: >))
        #expect(zip(started, started.dropFirst()).allSatisfy { a, b in
            levels[Int(a) % levels.count] != levels[Int(b) % levels.count] || a < b })
    }
}

/// Nothing of a finished part stays alive: its context (and with it the task) is released.
@Suite struct LeakTests {
    final class WeakBox: @unchecked Sendable {
        weak var context: OperationContext?
        let lock = NSLock()
    }

    @Test func finishedAndCancelledPartsReleaseTheirContext() async throws {
        for cancel in [false, true] {
            let box = WeakBox()
            var registry = HandlerRegistry()
            registry.register(kind: "capture") { context in
                box.lock.withLock { box.context = context }
                if cancel { try await Task.sleep(for: .seconds(60)) }
                return []
            }
            let recorder = EventRecorder()
            let queue = LocalOperationQueue(slots: 1, registry: registry, eventSink: recorder.sink)
            let p = part("c", "capture")
            queue.submit(p)
            try await recorder.waitStarted(p.key)
            if cancel { queue.cancel(opID: "c", reason: "stop") }
            _ = try await recorder.waitFinished(p.key)
            try await withTimeout(.seconds(5), "idle") { await queue.waitUntilIdle() }
            // The task lets go of its closure just after it reports; allow it a moment (bounded).
            let released = try await withTimeout(.seconds(5), "the context to be released") {
                while box.lock.withLock({ box.context != nil }) { try await Task.sleep(for: .milliseconds(1)) }
                return true
            }
            #expect(released)
        }
    }
}
