@testable import Coordinator
import Foundation
import Journal
import Logging
import SchedulerCore
import WireProtocol

/// The coordinator in one process, without sockets, threads or a clock: its shell and core, driven by
/// scripted peers through encoded frames, in the order of the loop's pass (`CoordinatorShell`), on
/// virtual time. What a peer is sent is decoded as it would decode it, so a test sees exactly the
/// bytes the coordinator made. The same script gives the same frames every time.
struct EmbeddedCoordinator {
    private(set) var shell: CoordinatorShell
    /// Virtual time, µs.
    private(set) var now: Int64
    /// Whether client messages wait for `sync()` (the journal's fdatasync) before they leave.
    let journalled: Bool
    /// The journal batches handed over so far (their sequence) and their records.
    private(set) var appendedBatches: UInt64 = 0
    private(set) var journalRecords = 0
    private var mailboxes: [[UInt8]: [Envelope]] = [:]
    /// Everything sent to every peer, in order (`take` does not remove from it).
    private(set) var transcript: [(peer: [UInt8], envelope: Envelope)] = []
    private var requestIDs: [[UInt8]: UInt32] = [:]
    /// Each peer's key (the User-Id the ZAP handler gives its connection: its public key), when the
    /// coordinator checks keys (`allow`).
    private var keys: [[UInt8]: String] = [:]

    /// `allow`: an allow file's text (PROTOCOL.md §12): every message is then authorized against its
    /// sender's key (`use(key:for:)`), as the loop does, before the shell takes it.
    init(journalled: Bool = false, allow: String? = nil, start: Int64 = 1_000_000,
         _ configure: (inout CoordinatorConfig) -> Void = { _ in }) {
        var config = CoordinatorConfig(bind: "inproc://embedded")
        configure(&config)
        var coreConfig = CoordinatorShell.schedulerConfig(config)
        coreConfig.journal = journalled
        var logger = Logger(label: "embedded-coordinator")
        logger.logLevel = .critical
        shell = CoordinatorShell(config: config, core: Scheduler(config: coreConfig), journalled: journalled, logger: logger)
        now = start
        shell.now = start
        self.journalled = journalled
        if let allow {
            do {
                shell.access = ShellAccess(list: try AllowList.parse(allow, source: "allow"), generation: 1)
            } catch {
                preconditionFailure("the harness's allow file: \(error)")
            }
        }
    }

    /// `peer` speaks with `key` from now on (its CURVE public key; nil: a connection without one).
    mutating func use(key: String?, for peer: [UInt8]) { keys[peer] = key }

    // MARK: peers

    /// `message` from `peer`, as its frames would arrive (malformed ones are refused as the loop
    /// refuses them), then what it made is delivered. Returns the request id it carried.
    @discardableResult
    mutating func send(_ message: Message, from peer: [UInt8], principal: Principal? = nil) -> UInt32 {
        let rid = (requestIDs[peer] ?? 0) &+ 1
        requestIDs[peer] = rid
        let frames = WireCodec.encode(message, requestID: rid)
        switch WireCodec.decode(frames) {
        case .success(let envelope):
            var principal = principal
            if shell.access != nil {
                // As the loop does: checked against the sender's key first; a refusal goes no further.
                guard let p = shell.authorize(envelope, from: peer, user: keys[peer], inProcess: false) else { break }
                principal = p
            }
            shell.receive(envelope, from: peer, body: frames, principal: principal)
        case .failure(let error): shell.reject(error, frames: frames, from: peer)
        }
        deliver()
        return rid
    }

    /// What `peer` was sent since the last call, in order (heartbeats left out unless asked for).
    mutating func take(_ peer: [UInt8], heartbeats: Bool = false) -> [Envelope] {
        let all = mailboxes.removeValue(forKey: peer) ?? []
        return heartbeats ? all : all.filter { if case .heartbeat = $0.message { return false } else { return true } }
    }

    /// The reply to request `rid` of `peer` (other messages to it are kept for `take`).
    mutating func reply(_ peer: [UInt8], to rid: UInt32) -> Message? {
        guard let i = mailboxes[peer]?.firstIndex(where: { $0.requestID == rid }) else { return nil }
        return mailboxes[peer]!.remove(at: i).message
    }

    // MARK: time and the journal

    /// The rest of one loop pass after a burst: timers, flush, the journal's batch, heartbeats.
    mutating func pass() {
        shell.tick()
        shell.flush()
        deliver()
        commit()
        shell.heartbeatIdleWorkers()
        shell.forgetIdlePeers()
        deliver()
    }

    /// Moves the clock on by `micros` in steps to each time the shell asked to be woken, with a pass at
    /// each, as the loop would.
    mutating func advance(by micros: Int64) {
        let until = now + micros
        var passes = 0
        while true {
            let next = min(max(shell.nextWake, now), until)
            setNow(next)
            pass()
            passes += 1
            precondition(passes < 1_000_000, "the shell asked to be woken a million times within \(micros) µs")
            if next >= until { return }
        }
    }

    /// Hands this pass's records to the journal (their batch is appended, not yet durable).
    mutating func commit() {
        guard !shell.journalBatch.isEmpty else { return }
        precondition(journalled, "records made by a core that does not journal")
        appendedBatches += 1
        journalRecords += shell.journalBatch.count
        shell.gate.appended(appendedBatches)
        shell.journalBatch.removeAll()
    }

    /// The journal made everything appended durable: what waited for it is sent.
    mutating func sync() {
        shell.durable(upTo: appendedBatches)
        deliver()
    }

    /// The journal starts again from its durable records (a deposed leader reloads it): its batch
    /// numbers start over, and the shell drops what it held for the old ones.
    mutating func reloadJournal() {
        shell.journalBatch.removeAll()
        shell.dropHeldForDurability()
        appendedBatches = 0
    }

    private mutating func setNow(_ t: Int64) {
        now = t
        shell.now = t
    }

    /// Each outgoing message, encoded as the loop encodes it and decoded as its peer would.
    private mutating func deliver() {
        for o in shell.takeOutput() {
            let frames = o.body.map { [Header(command: o.message.command, requestID: o.requestID).bytes, $0.bytes] }
                ?? WireCodec.encode(o.message, requestID: o.requestID)
            switch WireCodec.decode(frames) {
            case .success(let envelope):
                mailboxes[o.routing, default: []].append(envelope)
                transcript.append((o.routing, envelope))
            case .failure(let error): preconditionFailure("the coordinator sent \(o.message.command) its peer cannot decode: \(error)")
            }
        }
    }
}

/// A worker as the coordinator sees it: a routing id, its HELLO, and the reports the test makes it send.
struct ScriptedWorker {
    let routing: [UInt8]
    let name: String
    let slots: Int
    let kinds: [String]
    let tags: [String]

    /// `routing`: its connection (default: one per name; a restarted worker has another).
    init(_ name: String, slots: Int = 1, kinds: [String] = ["noop", "echo", "fail", "sleep"], tags: [String] = [], routing: [UInt8]? = nil) {
        self.name = name
        self.routing = routing ?? Array("w-\(name)".utf8)
        self.slots = slots
        self.kinds = kinds
        self.tags = tags
    }

    var hello: Message {
        .hello(.with {
            $0.protocolVersion = UInt32(WireVersion.current)
            $0.name = name
            $0.slots = UInt32(slots)
            $0.kinds = kinds
            $0.tags = tags
            $0.prefetch = 0
        })
    }
}

extension EmbeddedCoordinator {
    /// HELLO, WELCOME, then a credit of `credit` (default: its slots).
    mutating func connect(_ w: ScriptedWorker, credit: Int? = nil) {
        send(w.hello, from: w.routing)
        guard case .welcome? = take(w.routing).first?.message else { preconditionFailure("\(w.name): no WELCOME") }
        send(.credit(.with { $0.credit = UInt32(credit ?? w.slots) }), from: w.routing)
    }

    /// The records of every DISPATCH `w` was sent since the last look (after a pass, so they left); its
    /// other messages stay for `take`.
    mutating func dispatched(to w: ScriptedWorker) -> [WireDispatchRecord] {
        dispatched(to: [w]).map(\.record)
    }

    /// Each record dispatched to any of `workers` since the last look, with the worker it went to.
    mutating func dispatched(to workers: [ScriptedWorker]) -> [(worker: ScriptedWorker, record: WireDispatchRecord)] {
        pass()
        return workers.flatMap { w in
            pick(w.routing) { m -> [WireDispatchRecord]? in if case .dispatch(let d) = m { d.records } else { nil } }.map { (w, $0) }
        }
    }

    /// The records of every CANCEL `w` was sent since the last look; its other messages stay.
    mutating func cancels(to w: ScriptedWorker) -> [WireCancelRecord] {
        pick(w.routing) { m -> [WireCancelRecord]? in if case .cancel(let c) = m { c.records } else { nil } }
    }

    /// Removes the messages to `peer` that `records` takes something from; leaves the others.
    private mutating func pick<Record>(_ peer: [UInt8], _ records: (Message) -> [Record]?) -> [Record] {
        var out: [Record] = [], kept: [Envelope] = []
        for e in mailboxes.removeValue(forKey: peer) ?? [] {
            if let r = records(e.message) { out += r } else { kept.append(e) }
        }
        if !kept.isEmpty { mailboxes[peer] = kept }
        return out
    }

    /// Every DISPATCH record `w` was ever sent (`take` does not remove from the transcript).
    func transcriptDispatches(to w: ScriptedWorker) -> [WireDispatchRecord] {
        transcript.filter { $0.peer == w.routing }.flatMap { e -> [WireDispatchRecord] in
            if case .dispatch(let d) = e.envelope.message { return d.records } else { return [] }
        }
    }

    /// `w` reports `records` succeeded with `result` (STARTED riding on each), granting one credit each.
    mutating func succeed(_ records: [WireDispatchRecord], on w: ScriptedWorker, result: String = "") {
        send(.finished(.with { f in
            f.records = records.map { r in
                .with {
                    $0.opID = r.opID
                    $0.part = r.part
                    $0.attempt = r.attempt
                    $0.token = r.token
                    $0.succeeded = Data(result.utf8)
                }
            }
            f.credit = UInt32(records.count)
        }), from: w.routing)
    }

    /// `w` reports `records` failed with `error`, granting one credit each.
    mutating func fail(_ records: [WireDispatchRecord], on w: ScriptedWorker, error: String) {
        send(.finished(.with { f in
            f.records = records.map { r in
                .with { $0.opID = r.opID; $0.part = r.part; $0.attempt = r.attempt; $0.token = r.token; $0.failed = error }
            }
            f.credit = UInt32(records.count)
        }), from: w.routing)
    }

    /// `w` stopped what CANCEL named and reports it cancelled, granting a credit each (as a worker does).
    mutating func stopped(_ records: [WireCancelRecord], on w: ScriptedWorker) {
        guard !records.isEmpty else { return }
        send(.finished(.with { f in
            f.records = records.map { r in .with { $0.opID = r.opID; $0.attempt = r.attempt; $0.cancelled = r.reason } }
            f.credit = UInt32(records.count)
        }), from: w.routing)
    }

    /// `w` reports `records` started (at the coordinator's `now`: the worker's clock gives no offset).
    mutating func start(_ records: [WireDispatchRecord], on w: ScriptedWorker) {
        send(.started(.with { s in
            s.parts = records.map { r in .with { $0.opID = r.opID; $0.part = r.part; $0.attempt = r.attempt; $0.token = r.token } }
        }), from: w.routing)
    }

    /// A client's request and its reply (after the journal's sync when journalled).
    mutating func request(_ message: Message, from client: [UInt8] = Array("client".utf8)) -> Message? {
        let rid = send(message, from: client)
        if journalled { pass(); sync() }
        return reply(client, to: rid)
    }

    /// A client's SUBMIT; returns the reply (after the journal's sync when journalled).
    mutating func submit(_ ops: [WireOperation], queues: [WireQueueSettings] = [], run: String = "", from client: [UInt8] = Array("client".utf8)) -> WireSubmitReply? {
        let rid = send(.submit(.with { $0.operations = ops; $0.queues = queues; $0.run = run }), from: client)
        if journalled { pass(); sync() }
        guard case .submitReply(let r)? = reply(client, to: rid) else { return nil }
        return r
    }

    /// A client's STATUS of `ids` (with results) in `run`; nil when the reply is not STATUS-REPLY.
    mutating func status(_ ids: [String] = [], run: String = "", from client: [UInt8] = Array("client".utf8)) -> WireStatusReply? {
        let rid = send(.status(.with { $0.opIds = ids; $0.run = run; $0.withResults = true }), from: client)
        if journalled { pass(); sync() }
        guard case .statusReply(let r)? = reply(client, to: rid) else { return nil }
        return r
    }
}
