import Foundation
import OpSpec
import Synchronization
import Testing
@testable import WorkerRuntime

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing with `TimedOut` if it takes longer than `timeout`.
func withTimeout<T: Sendable>(_ timeout: Duration = .seconds(10), _ what: String = "operation",
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimedOut(what: what)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// Collects the queue's events and lets a test await a condition on them (bounded).
final class EventRecorder: Sendable {
    private struct Waiter {
        var id: Int
        var predicate: @Sendable ([WorkerEvent]) -> Bool
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var events: [WorkerEvent] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }
    private let state = Mutex(State())

    var events: [WorkerEvent] { state.withLock { $0.events } }

    var sink: @Sendable (WorkerEvent) -> Void { { [self] event in self.append(event) } }

    func append(_ event: WorkerEvent) {
        let ready: [Waiter] = state.withLock { state in
            state.events.append(event)
            let events = state.events
            let ready = state.waiters.filter { $0.predicate(events) }
            state.waiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Waits until `predicate(events)` holds; throws `TimedOut` after `timeout`.
    @discardableResult
    func wait(_ what: String, timeout: Duration = .seconds(10),
              until predicate: @escaping @Sendable ([WorkerEvent]) -> Bool) async throws -> [WorkerEvent] {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTimeout(timeout, what) {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let satisfied = self.state.withLock { state in
                        if predicate(state.events) || Task.isCancelled { return true }
                        state.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                        return false
                    }
                    if satisfied { continuation.resume() }
                }
            } onCancel: {
                let waiter = self.state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
        }
        return events
    }

    func waitFinished(_ key: PartKey, timeout: Duration = .seconds(10)) async throws -> OperationOutcome {
        let events = try await wait("\(key) to finish", timeout: timeout) { events in
            events.contains { if case .finished(key, _, _) = $0 { true } else { false } }
        }
        for case .finished(key, let outcome, _) in events { return outcome }
        fatalError("unreachable")
    }

    func waitStarted(_ key: PartKey, timeout: Duration = .seconds(10)) async throws {
        try await wait("\(key) to start", timeout: timeout) { events in events.contains(.started(key)) }
    }
}

func part(_ id: String, _ kind: String, _ payload: [UInt8] = [], priority: OperationPriority = .normal,
          qos: OperationQoS = .default, attempt: Int = 1, inputs: [DispatchedPart.Input] = []) -> DispatchedPart {
    DispatchedPart(key: PartKey(opID: id, part: 0, attempt: attempt), kind: kind, payload: payload, inputs: inputs,
                   priority: priority, qos: qos)
}

func context(_ kind: String, _ payload: [UInt8], inputs: [DispatchedPart.Input] = [], id: String = "op") -> OperationContext {
    OperationContext(part: part(id, kind, payload, inputs: inputs))
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
func text(_ bytes: [UInt8]?) -> String { String(decoding: bytes ?? [], as: UTF8.self) }

/// Runs `handler` on `context` as the queue would, giving the outcome.
func outcome(of handler: any OperationHandler, _ context: OperationContext) async -> OperationOutcome {
    do {
        let result = try await handler.run(context)
        return context.isCancelled ? .cancelled(context.cancellationReason ?? "") : .succeeded(result)
    } catch {
        if let reason = context.cancellationReason { return .cancelled(reason) }
        return .failed(LocalOperationQueue.describe(error))
    }
}

/// Live (non-zombie) processes, read from /proc: (pid, process group).
func liveProcesses() -> [(pid: Int32, pgrp: Int32)] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    var result: [(Int32, Int32)] = []
    for entry in entries {
        guard let pid = Int32(entry),
              let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        // After "pid (comm) ": state ppid pgrp …
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 2, fields[0] != "Z", fields[0] != "X", let pgrp = Int32(fields[2]) else { continue }
        result.append((pid, pgrp))
    }
    return result
}

/// True while `pid` is a live (non-zombie) process.
func processAlive(_ pid: Int32) -> Bool { liveProcesses().contains { $0.pid == pid } }

/// Live members of process group `pgid`.
func groupMembers(_ pgid: Int32) -> [Int32] { liveProcesses().filter { $0.pgrp == pgid }.map(\.pid) }

func monotonicNow() -> ContinuousClock.Instant { ContinuousClock.now }

/// Waits (bounded) until group `pgid` has no live member: SIGKILL is delivered asynchronously,
/// so a killed process can be visible for a moment after `kill` returns.
func groupGone(_ pgid: Int32, within timeout: Duration = .seconds(3)) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if groupMembers(pgid).isEmpty { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return groupMembers(pgid).isEmpty
}

/// The nice value of a process, from /proc/<pid>/stat (field 19).
func niceLevel(of pid: Int32) -> Int? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // fields[0] is field 3 (state), so field 19 is fields[16].
    return fields.count > 16 ? Int(fields[16]) : nil
}

/// User + system CPU time of this process so far.
func processCPUTime() -> Duration {
    var u = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
    return .seconds(Int64(u.ru_utime.tv_sec) + Int64(u.ru_stime.tv_sec))
        + .microseconds(Int64(u.ru_utime.tv_usec) + Int64(u.ru_stime.tv_usec))
}
