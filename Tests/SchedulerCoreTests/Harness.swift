import Testing
@testable import SchedulerCore

/// Drives a Scheduler step by step, validating after every input.
struct Harness {
    var s: Scheduler
    var now: Int64 = 1_000
    var stimulus: UInt64 = 0
    var request: UInt64 = 0
    var validateEachStep = true
    /// Every journal record emitted, with its time (what the disk would hold).
    var journal: [(at: Int64, record: JournalRecord)] = []

    init(config: SchedulerConfig = SchedulerConfig()) { s = Scheduler(config: config) }

    @discardableResult
    mutating func send(_ e: Event, sourceLocation: SourceLocation = #_sourceLocation) -> [Action] {
        stimulus += 1
        let out = s.handle(Input(stimulus: stimulus, now: now, e))
        for a in out { if case .journal(let r) = a { journal.append((now, r)) } }
        if validateEachStep {
            let bad = s.validate()
            #expect(bad.isEmpty, "invalid state after \(e): \(bad.prefix(5))", sourceLocation: sourceLocation)
        }
        return out
    }

    mutating func ref() -> ClientRef { request += 1; return ClientRef(client: 7, request: request) }

    /// Submits and returns the reply plus any dispatches.
    @discardableResult
    mutating func submit(_ specs: [OperationSpec], queues: [QueueSpec] = [], unknownPriorities: [Int: Int] = [:],
                         sourceLocation: SourceLocation = #_sourceLocation) -> (Reply?, [Dispatch]) {
        let r = ref()
        let out = send(.submit(r, ops: specs, queues: queues, unknownPriorities: unknownPriorities), sourceLocation: sourceLocation)
        return (replies(out).first, dispatches(out))
    }

    @discardableResult
    mutating func join(_ id: UInt64, slots: Int = 1, kinds: [String] = ["noop"], tags: [String] = [], credit: Int? = nil) -> [Dispatch] {
        dispatches(send(.workerJoined(WorkerHello(worker: id, name: "w\(id)", slots: slots, tags: tags, kinds: kinds, credit: credit))))
    }

    @discardableResult
    mutating func finish(_ d: Dispatch, _ outcome: Outcome = .succeeded([]), grant: Int = 1, at: Int64? = nil) -> [Action] {
        send(.partFinished(PartRef(worker: d.worker, op: d.op, part: d.part, attempt: d.attempt, at: at), outcome, grant: grant))
    }

    /// The worker says the part's handler started (dispatched → executing).
    @discardableResult
    mutating func start(_ d: Dispatch, at: Int64? = nil) -> [Action] {
        send(.partStarted(PartRef(worker: d.worker, op: d.op, part: d.part, attempt: d.attempt, at: at)))
    }

    /// Runs everything to completion on the given dispatches (finishing each, FIFO); returns op ids in dispatch order.
    @discardableResult
    mutating func drain(_ initial: [Dispatch], outcome: (Dispatch) -> Outcome = { _ in .succeeded([]) }, limit: Int = 100_000) -> [String] {
        var pending = initial
        var order: [String] = []
        var n = 0
        while !pending.isEmpty && n < limit {
            n += 1
            let d = pending.removeFirst()
            order.append(d.op)
            pending += dispatches(finish(d, outcome(d)))
        }
        return order
    }

    func state(_ id: String) -> OpState? { s.status(id)?.state }
}

func dispatches(_ a: [Action]) -> [Dispatch] { a.compactMap { if case .dispatch(let d) = $0 { return d } else { return nil } } }
func replies(_ a: [Action]) -> [Reply] { a.compactMap { if case .reply(_, let r) = $0 { return r } else { return nil } } }
func cancels(_ a: [Action]) -> [(UInt64, String)] {
    a.compactMap { if case .cancelOnWorker(let w, let op, _, _, _) = $0 { return (w, op) } else { return nil } }
}
func op(_ id: String, _ after: [String] = [], q: String = "default", p: Int = 0, kind: String = "noop") -> OperationSpec {
    OperationSpec(id: id, queue: q, kind: kind, after: after, priority: OperationPriority(rawValue: p)!)
}
