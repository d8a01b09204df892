import Foundation
import SchedulerCore
import WireProtocol

// Translations both ways between wire messages and the core's value types (wire → core for inputs,
// core → wire for dispatches, outcomes and states). Pure functions, no state.

extension OpState {
    var wire: WireOpState {
        switch self {
        case .pending, .delayed: .pending   // the wire has no delayed: status says why (retrying)
        case .ready: .ready
        case .dispatched: .dispatched
        case .executing: .executing
        case .finished: .finished
        }
    }

    /// nil for UNSPECIFIED or an unknown value.
    init?(wire: WireOpState) {
        switch wire {
        case .pending: self = .pending
        case .ready: self = .ready
        case .dispatched: self = .dispatched
        case .executing: self = .executing
        case .finished: self = .finished
        default: return nil
        }
    }
}

extension Outcome {
    init(wire record: WireFinishedRecord) {
        switch record.outcome {
        case .succeeded(let d)?: self = .succeeded([UInt8](d))
        case .failed(let e)?: self = .failed(e)
        case .cancelled(let r)?: self = .cancelled(r)
        case nil: self = .failed("worker sent no outcome")   // validation rejects this before we get here
        }
    }

    /// - Parameter withResult: include result bytes (status replies only send them on request).
    func wire(withResult: Bool = true) -> WireOutcome {
        var o = WireOutcome()
        switch self {
        case .succeeded(let bytes): o.succeeded = withResult ? Data(bytes) : Data()
        case .failed(let e): o.failed = e
        case .cancelled(let r): o.cancelled = r
        }
        return o
    }
}

enum WireCoreMapping {
    /// A SUBMIT's operations as specs, and the priorities given that are no `OperationPriority` by
    /// index (such a spec says `.normal`; the core lists `invalidPriority` in its place, `Event.submit`).
    static func operations(_ ws: [WireOperation]) -> (specs: [OperationSpec], unknownPriorities: [Int: Int]) {
        var unknown: [Int: Int] = [:]
        let specs = ws.enumerated().map { i, w in
            let priority = OperationPriority(rawValue: Int(w.priority))
            if priority == nil { unknown[i] = Int(w.priority) }
            return operation(w, priority: priority ?? .normal)
        }
        return (specs, unknown)
    }

    /// Absent fields become the coordinator's defaults (retry delays: nil, `OperationSpec.retryDelayMicros`).
    static func operation(_ w: WireOperation, priority: OperationPriority) -> OperationSpec {
        OperationSpec(
            id: w.id,
            name: w.name.isEmpty ? nil : w.name,
            queue: w.queue.isEmpty ? OperationSpec.defaultQueue : w.queue,
            kind: w.kind,
            payload: [UInt8](w.payload),
            after: w.after,
            priority: priority,
            qos: OperationQoS(wire: w.qos),
            parts: w.parts == 0 ? 1 : Int(w.parts),
            policy: DependencyPolicy(wire: w.policy),
            retries: Int(w.retries),
            lossRetries: w.hasLossRetries ? Int(w.lossRetries) : OperationSpec.defaultLossRetries,
            timeoutMicros: w.timeoutUs > 0 ? w.timeoutUs : nil,
            requires: w.requires,
            barrier: w.barrier,
            retryDelayMicros: OperationSpec.retryDelayMicros(w.hasRetryDelayUs ? w.retryDelayUs : nil),
            retryDelayMaxMicros: OperationSpec.retryDelayMaxMicros(w.hasRetryDelayMaxUs ? w.retryDelayMaxUs : nil),
            share: w.share.isEmpty ? nil : w.share,
            concurrencyKey: w.concurrencyKey.isEmpty ? nil : w.concurrencyKey)
    }

    static func queue(_ w: WireQueueSettings) -> QueueSpec {
        QueueSpec(name: w.name,
                  maxConcurrent: w.hasMaxConcurrent ? Int(w.maxConcurrent) : -1,
                  qos: OperationQoS(wire: w.qos) ?? .default,
                  suspended: w.hasSuspended ? w.suspended : false)
    }

    /// `token`: the wire's (1.10), the DISPATCH's echoed: the core's row + 1, so 0 (a 1.9 worker) is none.
    static func partRef(worker: UInt64, _ opID: String, part: UInt32, attempt: UInt32, token: UInt64 = 0,
                        at: Int64? = nil) -> PartRef {
        PartRef(worker: worker, op: opID, part: Int(part), attempt: Int(attempt), token: token == 0 ? nil : token &- 1, at: at)
    }

    static func unplaceable(_ u: Unplaceable) -> WireUnplaceable {
        var w = WireUnplaceable()
        w.kind = u.kind
        w.requires = u.requires
        w.missingTags = u.missingTags
        w.noWorkerKind = u.noWorkerKind
        w.opIds = u.ops
        w.opCount = UInt64(u.count)
        return w
    }

    /// The dispatch is taken apart, its strings moved into the record (`take`), not copied.
    static func dispatchRecord(_ d: consuming Dispatch) -> WireDispatchRecord {
        let inputs: [WireInput] = d.inputs.isEmpty ? [] : d.inputs.map { dependency, bytes in
            var i = WireInput()
            i.dependencyID = dependency
            i.result = Data(bytes)
            return i
        }
        return WireDispatchRecord(
            opID: take(&d.op, ""), part: UInt32(d.part), attempt: UInt32(d.attempt), kind: take(&d.kind, ""),
            payload: d.payload.isEmpty ? Data() : Data(d.payload), inputs: inputs, priority: Int32(d.priority),
            qos: d.qos.wire, name: take(&d.name, nil) ?? "",
            token: d.token &+ 1)    // 0 on the wire is "none" (partRef)
    }

    static func submitProblem(_ p: SubmitProblem) -> WireSubmitError {
        var e = WireSubmitError()
        e.message = p.description
        switch p {
        case .emptyId: e.problem = .invalidField; e.field = "id"
        case .duplicateId(let id): e.problem = .duplicateID; e.opID = id
        case .unknownDependency(let op, let dep): e.problem = .unknownDependency; e.opID = op; e.related = [dep]
        case .cycle(let ids): e.problem = .cycle; e.related = ids; e.opID = ids.first ?? ""
        case .invalidPriority(let op, _): e.problem = .invalidField; e.opID = op; e.field = "priority"
        case .invalidParts(let op, _): e.problem = .invalidField; e.opID = op; e.field = "parts"
        case .invalidRetries(let op, _): e.problem = .invalidField; e.opID = op; e.field = "retries"
        case .invalidTimeout(let op): e.problem = .invalidField; e.opID = op; e.field = "timeout"
        case .invalidRetryDelay(let op): e.problem = .invalidField; e.opID = op; e.field = "retry_delay"
        case .emptyKind(let op): e.problem = .invalidField; e.opID = op; e.field = "kind"
        case .invalidQueue(let name, _): e.problem = .invalidField; e.field = "queues[\(name)]"
        case .tooManyTags: e.problem = .limit; e.field = "requires"
        case .invalidId(let op, _): e.problem = .invalidField; e.opID = op; e.field = "id"
        case .invalidRun: e.problem = .invalidField; e.field = "run"
        case .unavailableDependency(let op, let dep, _): e.problem = .unknownDependency; e.opID = op; e.related = [dep]
        case .submissionKeyReused: e.problem = .invalidField; e.field = "submission_key"
        }
        return e
    }

    /// An attempt a re-registering worker holds (HELLO `running`, `finished`); `startedAt` on our
    /// timeline, nil when its handler has not started.
    static func heldPart(opID: String, part: UInt32, attempt: UInt32, startedAt: Int64?) -> HeldPart {
        HeldPart(op: opID, part: Int(part), attempt: Int(attempt), startedAt: startedAt)
    }
}

/// The value of `field`, leaving `empty` in its place: a move where reading it would copy (a retain, and
/// a release when the rest of the value goes).
@inline(__always)
func take<T>(_ field: inout T, _ empty: T) -> T {
    var value = empty
    swap(&field, &value)
    return value
}
