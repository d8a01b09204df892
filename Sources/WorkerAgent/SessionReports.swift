import OpSpec
import WireProtocol
import WorkerRuntime

// What the local queue reports (started, progress, finished), turned into messages by the session machine.

extension SessionMachine {
    /// The local queue's events since the last call, each stamped when it happened. Sends one message
    /// per kind: FINISHED first, then STARTED, so the coordinator never counts more parts running here
    /// than there are slots (a slot is freed before the part that takes it starts). A part that started
    /// and finished since the last report goes in FINISHED alone, its start time in `started_at_us`.
    /// Unregistered (before WELCOME, between connections) nothing goes out: `held` keeps the events for
    /// the HELLO, or for right after WELCOME.
    mutating func events(_ events: [(event: WorkerEvent, at: Int64)], now: Int64) -> [Action] {
        if case .rejected = state { impossible("events") }
        if case .stopped = state { impossible("events") }
        guard !events.isEmpty else { return [] }
        var started: [WirePartRef] = []
        var startedIndex: [PartKey: Int] = [:]
        var progress: [WireProgressRecord] = []
        var finished: [WireFinishedRecord] = []
        var finishedKeys: [PartKey] = []
        var credit = 0
        for (event, at) in events {
            switch event {
            case .started(let key):
                guard let ref = held.started(key, at: at) else { continue }
                startedIndex[key] = started.count
                started.append(ref)
            case .progress(let key, let fraction, let message):
                guard held.registered && held.holds(key) else { continue }
                var r = WireProgressRecord()
                r.opID = key.opID
                r.part = UInt32(key.part)
                r.attempt = UInt32(key.attempt)
                r.fraction = fraction ?? 0
                if let message { r.message = String(message.prefix(1024)) }
                progress.append(r)
            case .finished(let key, let outcome, let output):
                var record = WireFinishedRecord(key: key, outcome: Self.bounded(outcome), at: at)
                if let output { record.setOutput(output) }
                guard case .report(let grant) = held.finished(key, record: &record, at: at) else { continue }
                credit += grant
                if let i = startedIndex.removeValue(forKey: key) {
                    record.startedAtUs = started[i].atUs
                    started[i].opID = ""   // reported with its FINISHED instead
                }
                finished.append(record)
                finishedKeys.append(key)
            }
        }
        started.removeAll { $0.opID.isEmpty }
        var actions: [Action] = []
        // Credit rides on the FINISHED messages, at most one per record in each.
        while case .finished(var m)? = Batcher.message(draining: &finished, sentUs: now) {
            m.credit = UInt32(min(credit, m.records.count))
            credit -= Int(m.credit)
            send(.finished(m), now: now, into: &actions)
        }
        if !finishedKeys.isEmpty { held.reportedFinished(finishedKeys, at: now) }
        while let m = Batcher.message(draining: &started, sentUs: now) { send(m, now: now, into: &actions) }
        while let m = Batcher.message(draining: &progress) { send(m, now: now, into: &actions) }
        return actions
    }

    /// Keeps an outcome within the protocol's limits, so a huge result fails clearly instead of
    /// being refused by the coordinator as a malformed message.
    static func bounded(_ outcome: OperationOutcome) -> OperationOutcome {
        switch outcome {
        case .succeeded(let bytes) where bytes.count > WireLimits.maxResultSize:
            return .failed("result of \(bytes.count) bytes is over the limit of \(WireLimits.maxResultSize) bytes")
        case .failed(let text) where text.utf8.count > WireLimits.maxTextLength:
            return .failed(String(decoding: text.utf8.suffix(WireLimits.maxTextLength - 16), as: UTF8.self))
        case .cancelled(let text) where text.utf8.count > WireLimits.maxTextLength:
            return .cancelled(String(text.prefix(1024)))
        default:
            return outcome
        }
    }
}
