import OpSpec
import Testing
@testable import WorkerRuntime

@Suite struct BuiltinHandlerTests {
    @Test func noopSucceedsEmpty() async {
        #expect(await outcome(of: NoopHandler(), context("noop", bytes("ignored"))) == .succeeded([]))
    }

    @Test func echoReturnsPayload() async {
        let payload: [UInt8] = [0, 1, 2, 255]
        #expect(await outcome(of: EchoHandler(), context("echo", payload)) == .succeeded(payload))
    }

    @Test func failUsesPayloadAsError() async {
        #expect(await outcome(of: FailHandler(), context("fail", bytes("disk full"))) == .failed("disk full"))
    }

    @Test func sleepWaitsThenSucceeds() async {
        let start = monotonicNow()
        #expect(await outcome(of: SleepHandler(), context("sleep", bytes("30"))) == .succeeded([]))
        #expect(monotonicNow() - start >= .milliseconds(30))
    }

    @Test func sleepAcceptsJSONObject() async {
        #expect(await outcome(of: SleepHandler(), context("sleep", bytes(#"{"milliseconds": 1}"#))) == .succeeded([]))
    }

    @Test func sleepRejectsBadPayload() async {
        let result = await outcome(of: SleepHandler(), context("sleep", bytes("soon")))
        #expect(result == .failed("sleep payload must be a whole number of milliseconds (e.g. 1500), got \"soon\""))
    }

    @Test func burnKeepsACoreBusyForAtLeastItsTimeThenSucceeds() async {
        let start = monotonicNow()
        let cpuBefore = processCPUTime()
        #expect(await outcome(of: BurnHandler(), context("burn", bytes("100"))) == .succeeded([]))
        let elapsed = monotonicNow() - start
        let cpu = processCPUTime() - cpuBefore
        #expect(elapsed >= .milliseconds(100))
        // Busy, not asleep (a sleep costs ~0 CPU). Not relative to elapsed: when every suite runs at once
        // on two cores the task may wait most of its wall time for a thread (76 ms of CPU in 1.6 s was seen).
        #expect(cpu >= .milliseconds(20), "burned \(cpu) of CPU in \(elapsed)")
    }

    @Test func burnAcceptsSleepsPayloadFormsAndNamesItselfInErrors() async {
        #expect(await outcome(of: BurnHandler(), context("burn", bytes(#"{"milliseconds": 1}"#))) == .succeeded([]))
        #expect(await outcome(of: BurnHandler(), context("burn", bytes("0"))) == .succeeded([]))
        let result = await outcome(of: BurnHandler(), context("burn", bytes("hot")))
        #expect(result == .failed("burn payload must be a whole number of milliseconds (e.g. 1500), got \"hot\""))
    }

    @Test func registryHasBuiltinsAndUserHandlers() {
        var registry = HandlerRegistry()
        #expect(registry.kinds == ["burn", "echo", "fail", "noop", "shell", "sleep"])
        registry.register(kind: "upper") { context in Array(text(context.payload).uppercased().utf8) }
        #expect(registry.kinds.contains("upper"))
        #expect(HandlerRegistry(builtins: false).kinds.isEmpty)
    }

    @Test func contextExposesInputsAndReportsProgress() async {
        let seen = Recorded<(Double?, String?)>()
        let context = OperationContext(
            part: DispatchedPart(key: PartKey(opID: "x", part: 2, attempt: 3), kind: "k",
                                 inputs: [.init(id: "a", result: bytes("A")), .init(id: "b", result: bytes("B"))]),
            progress: { fraction, message in seen.append((fraction, message)) })
        #expect(context.inputs == ["a": bytes("A"), "b": bytes("B")])
        #expect(context.inputList.map(\.id) == ["a", "b"])
        #expect(context.partIndex == 2 && context.attempt == 3 && context.name == "x")
        context.reportProgress(1.5, message: "done")
        #expect(seen.values.count == 1 && seen.values[0].0 == 1.0 && seen.values[0].1 == "done")
    }

    @Test func cancelRunsHandlersOnceAndKeepsFirstReason() {
        let context = context("k", [])
        let calls = Recorded<String>()
        context.onCancel { calls.append($0) }
        context.cancel(reason: "first")
        context.cancel(reason: "second")
        context.onCancel { calls.append("late " + $0) }
        #expect(context.cancellationReason == "first")
        #expect(calls.values == ["first", "late first"])
    }
}

final class Recorded<T: Sendable>: Sendable {
    private let storage = Synchronization.Mutex<[T]>([])
    func append(_ value: T) { storage.withLock { $0.append(value) } }
    var values: [T] { storage.withLock { $0 } }
}

import Synchronization
