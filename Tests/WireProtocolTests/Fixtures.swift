import Foundation
import WireProtocol

/// One valid message of every command, with distinctive field values.
enum Fixtures {
    static func dispatchRecord(_ i: Int) -> WireDispatchRecord {
        var r = WireDispatchRecord()
        r.opID = "op-\(i)"
        r.part = UInt32(i % 3)
        r.attempt = 1 + UInt32(i % 2)
        r.kind = "echo"
        r.payload = Data([UInt8(i & 0xFF), 1, 2, 3])
        r.priority = 4
        r.qos = .utility
        r.name = "Op \(i)"
        var input = WireInput()
        input.dependencyID = "dep-\(i)"
        input.result = Data("r\(i)".utf8)
        r.inputs = [input]
        return r
    }

    static func finishedRecord(_ i: Int) -> WireFinishedRecord {
        var r = WireFinishedRecord()
        r.opID = "op-\(i)"
        r.part = 0
        r.attempt = 1
        switch i % 3 {
        case 0: r.succeeded = Data("result-\(i)".utf8)
        case 1: r.failed = "boom \(i)"
        default: r.cancelled = "timeout"
        }
        return r
    }

    /// (1.5) LOGS, STORY and their replies.
    static var logs: WireLogs { var l = WireLogs(); l.opID = "r-1/flaky"; l.attempt = 2; return l }
    static var logsReply: WireLogsReply {
        var a = WireAttemptLog()
        a.attempt = 1; a.workerID = "w1"; a.outcome = "failed"; a.stdout = Data("out 1\n".utf8); a.stderr = Data("err 1\n".utf8)
        a.stdoutDropped = 4013; a.finishedUs = 1_700_000_000_000_000
        var b = a; b.attempt = 2; b.outcome = "succeeded"; b.stderr = Data(); b.stdoutDropped = 0
        var r = WireLogsReply(); r.run = "r-1"; r.opID = "flaky"; r.attempts = [a, b]; r.evicted = true
        return r
    }
    static var story: WireStory { var s = WireStory(); s.opID = "flaky"; s.run = "r-1"; return s }
    static var storyReply: WireStoryReply {
        func entry(_ stimulus: UInt64, _ event: String, attempt: UInt32 = 0, worker: String = "", detail: String = "") -> WireStoryEntry {
            var e = WireStoryEntry(); e.stimulus = stimulus; e.atUs = 1_700_000_000_000_000 + Int64(stimulus); e.event = event
            e.attempt = attempt; e.workerID = worker; e.detail = detail
            return e
        }
        var r = WireStoryReply(); r.run = "r-1"; r.opID = "flaky"
        r.entries = [entry(1, "submitted"), entry(1, "ready"), entry(2, "dispatched", worker: "w1"),
                     entry(3, "started", attempt: 1), entry(4, "finished", detail: "succeeded")]
        return r
    }

    static func outcome(_ text: String) -> WireOutcome {
        var o = WireOutcome()
        o.succeeded = Data(text.utf8)
        return o
    }

    static let all: [Envelope] = {
        var out: [Envelope] = []
        func add(_ m: Message, _ rid: UInt32 = 0) { out.append(Envelope(requestID: rid, m)) }

        var hello = WireHello()
        hello.protocolVersion = 1; hello.name = "host-a:42"; hello.slots = 4
        hello.tags = ["gpu", "ssd"]; hello.kinds = ["echo", "noop", "shell"]
        add(.hello(hello))
        var welcome = WireWelcome()
        welcome.workerID = "w-1"; welcome.heartbeatIntervalMs = 1000; welcome.liveness = 3
        add(.welcome(welcome))
        var reject = WireReject()
        reject.code = .unsupportedVersion; reject.reason = "protocol_version 2 not supported"
        add(.reject(reject))
        var credit = WireCredit(); credit.credit = 8
        add(.credit(credit))
        var dispatch = WireDispatch(); dispatch.records = (0..<3).map(dispatchRecord)
        add(.dispatch(dispatch))
        var started = WireStarted()
        started.parts = (0..<2).map { i in var p = WirePartRef(); p.opID = "op-\(i)"; p.part = UInt32(i); p.attempt = 1; return p }
        add(.started(started))
        var progress = WireProgress()
        var p1 = WireProgressRecord(); p1.opID = "op-1"; p1.attempt = 1; p1.fraction = 0.5; p1.message = "half"
        var p2 = WireProgressRecord(); p2.opID = "op-2"; p2.part = 1; p2.attempt = 2; p2.done = 3; p2.total = 10
        progress.records = [p1, p2]
        add(.progress(progress))
        var finished = WireFinished(); finished.records = (0..<3).map(finishedRecord); finished.credit = 3
        add(.finished(finished))
        var cancel = WireCancel()
        var c1 = WireCancelRecord(); c1.opID = "op-7"; c1.attempt = 2; c1.reason = "cancelled by client"
        cancel.records = [c1]
        add(.cancel(cancel))
        add(.heartbeat)
        var disconnect = WireDisconnect(); disconnect.reason = "shutting down"
        add(.disconnect(disconnect))

        var submit = WireSubmit()
        var q = WireQueueSettings(); q.name = "render"; q.maxConcurrent = 2; q.qos = .userInitiated; q.suspended = false
        submit.queues = [q]
        var o1 = WireOperation(); o1.id = "a"; o1.kind = "echo"; o1.payload = Data("hi".utf8); o1.queue = "render"
        var o2 = WireOperation(); o2.id = "b"; o2.name = "Bee"; o2.kind = "shell"; o2.after = ["a"]; o2.priority = -4
        o2.qos = .background; o2.parts = 2; o2.policy = .succeeded; o2.retries = 1; o2.lossRetries = 5
        o2.timeoutUs = 2_500_000; o2.requires = ["gpu"]; o2.barrier = true
        submit.operations = [o1, o2]
        add(.submit(submit), 11)
        var submitReply = WireSubmitReply()
        var se = WireSubmitError(); se.opID = "b"; se.problem = .cycle; se.message = "cycle a → b → a"; se.related = ["a", "b", "a"]
        submitReply.accepted = false; submitReply.errors = [se]
        add(.submitReply(submitReply), 11)
        var cancelOps = WireCancelOps(); cancelOps.opIds = ["a", "b"]; cancelOps.cascade = true; cancelOps.reason = "user"
        add(.cancelOps(cancelOps), 12)
        var qc = WireQueueControl(); var qs = WireQueueSettings(); qs.name = "render"; qs.suspended = true; qc.settings = qs
        add(.queue(qc), 13)
        var sp = WireSetPriority(); sp.opIds = ["b"]; sp.priority = 8; sp.inherit = true
        add(.setPriority(sp), 14)
        var ack = WireAck(); ack.affected = 1; ack.notFound = ["zz"]
        add(.ack(ack), 14)
        var status = WireStatus(); status.queue = "render"; status.limit = 100; status.ops = true
        add(.status(status), 15)
        var sr = WireStatusReply()
        var qcount = WireQueueCounts(); qcount.name = "render"; qcount.pending = 1; qcount.ready = 2; qcount.executing = 3
        qcount.finished = 4; qcount.maxConcurrent = -1; qcount.qos = .default
        var os = WireOpStatus(); os.id = "a"; os.queue = "render"; os.state = .finished; os.outcome = outcome("hi")
        os.workerID = "w-1"; os.attempts = 1; os.resultSize = 2; os.submittedUs = 1_000_000; os.finishedUs = 1_000_250
        sr.queues = [qcount]; sr.ops = [os]; sr.nextAfter = "a"; sr.nowUs = 1_000_300
        sr.coordinatorRssBytes = 12_900_352; sr.coordinatorCpuUs = 1_520_000
        add(.statusReply(sr), 15)
        var why = WireWhy(); why.opID = "b"
        add(.why(why), 16)
        var wr = WireWhyReply(); wr.opID = "b"; wr.state = .pending; wr.waitingOn = ["a"]; wr.reasons = ["waiting on a"]
        add(.whyReply(wr), 16)
        add(.workers, 17)
        var wkr = WireWorkersReply(); var wi = WireWorkerInfo(); wi.workerID = "w-1"; wi.name = "host-a:42"; wi.slots = 4
        wi.tags = ["gpu"]; wi.kinds = ["echo"]; wi.inFlight = 2; wi.credit = 2; wi.connectedUs = 5; wi.lastSeenUs = 9
        wkr.workers = [wi]
        add(.workersReply(wkr), 17)
        var watch = WireWatch(); watch.queue = "render"; watch.withResults = true
        add(.watch(watch), 18)
        var ev = WireEvents(); var e1 = WireEvent(); e1.sequence = 1; e1.opID = "a"; e1.state = .executing
        e1.timestampUs = 123; e1.attempt = 1; e1.workerID = "w-1"
        var e2 = WireEvent(); e2.sequence = 2; e2.opID = "a"; e2.state = .finished; e2.outcome = outcome("hi"); e2.timestampUs = 456
        ev.events = [e1, e2]
        add(.event(ev), 18)
        var wait = WireWait(); wait.opIds = ["a", "b"]; wait.timeoutUs = 5_000_000
        add(.wait(wait), 19)
        var wrp = WireWaitReply(); var oo = WireOpOutcome(); oo.opID = "a"; oo.outcome = outcome("hi")
        wrp.finished = false; wrp.timedOut = true; wrp.outcomes = [oo]; wrp.pending = ["b"]
        add(.waitReply(wrp), 19)
        var err = WireErrorReply(); err.code = .notFound; err.message = "no operation zz"; err.command = 0x28; err.opID = "zz"
        add(.error(err), 20)
        var runs = WireRuns(); runs.runs = ["r-1"]; runs.limit = 10
        add(.runs(runs), 21)
        var rr = WireRunsReply(); var ri = WireRunInfo(); ri.id = "r-1"; ri.total = 2; ri.succeeded = 2; ri.finishedUs = 99
        rr.runs = [ri]; rr.retained = 1
        add(.runsReply(rr), 21)
        add(.logs(logs), 22)
        add(.logsReply(logsReply), 22)
        add(.story(story), 23)
        add(.storyReply(storyReply), 23)
        add(.ha(WireHighAvailability.with { $0.stepDown = true }), 24)
        add(.haReply(WireHighAvailabilityReply.with {
            $0.enabled = true; $0.leading = true; $0.leader = "tcp://a:7600"; $0.leaderEpoch = 9; $0.group = "prod"
            $0.advertise = "tcp://a:7600"; $0.store = "etcd=http://e:2379"; $0.servingLeftMs = 1500; $0.electionsWon = 2; $0.epoch = 9
        }), 24)
        var follow = WireFollow(); follow.fromRecord = 42; follow.name = "standby-b"; follow.lastCrc = 0xDEADBEEF
        add(.follow(follow), 0)
        var chunk = WireJournalChunk(); chunk.firstRecord = 42; chunk.records = 1; chunk.frames = Data([1, 2, 3])
        add(.journal(chunk), 0)
        var snap = WireSnapshotChunk(); snap.snapshot = 7; snap.recordsAfter = 40; snap.offset = 0; snap.total = 3; snap.data = Data([9, 9, 9])
        add(.snapshot(snap), 0)
        var rack = WireReplicaAck(); rack.received = 3; rack.durableRecord = 43
        add(.replicaAck(rack), 0)
        add(.promote, 24)
        return out
    }()
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func unhex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = s.utf8.makeIterator()
    func nib(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
    while let a = it.next(), let b = it.next() { out.append(nib(a) << 4 | nib(b)) }
    return out
}
