import WireProtocol

// Wire values as the coordinator would send them, for the watch's tests.

func queueCounts(_ name: String, pending: UInt64 = 0, ready: UInt64 = 0, dispatched: UInt64 = 0, executing: UInt64 = 0,
                 finished: UInt64 = 0, failed: UInt64 = 0, cancelled: UInt64 = 0, suspended: Bool = false) -> WireQueueCounts {
    var q = WireQueueCounts()
    q.name = name
    q.pending = pending
    q.ready = ready
    q.dispatched = dispatched
    q.executing = executing
    q.finished = finished
    q.failed = failed
    q.cancelled = cancelled
    q.suspended = suspended
    return q
}

func runInfo(_ id: String, total: UInt64, succeeded: UInt64 = 0, executing: UInt64 = 0, ready: UInt64 = 0,
             failed: UInt64 = 0, submittedUs: Int64 = 1_000_000, finishedUs: Int64 = 0) -> WireRunInfo {
    var r = WireRunInfo()
    r.id = id
    r.total = total
    r.succeeded = succeeded
    r.executing = executing
    r.ready = ready
    r.failed = failed
    r.pending = total - succeeded - executing - ready - failed
    r.submittedUs = submittedUs
    r.finishedUs = finishedUs
    return r
}

func worker(_ id: String, _ name: String, slots: UInt32 = 2, running: UInt32 = 0, inFlight: UInt32 = 0, session: UInt32 = 1) -> WireWorkerInfo {
    var w = WireWorkerInfo()
    w.workerID = id
    w.name = name
    w.slots = slots
    w.running = running
    w.inFlight = inFlight
    w.session = session
    return w
}

func event(_ run: String, _ op: String, _ state: WireOpState, attempt: UInt32 = 0, worker: String = "",
           failed: String? = nil) -> WireEvent {
    var e = WireEvent()
    e.run = run
    e.opID = op
    e.state = state
    e.attempt = attempt
    e.workerID = worker
    if let failed {
        var o = WireOutcome()
        o.result = .failed(failed)
        e.outcome = o
    }
    return e
}
