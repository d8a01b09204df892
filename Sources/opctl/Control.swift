import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Why: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Explain why an operation is not running (or how it ended).")
    @OptionGroup var connection: Connection
    @OptionGroup var scope: RunScope
    @Argument(help: "Operation id (OP in the --run scope, or RUN/OP).") var id: String

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        var w = WireWhy()
        w.opID = id
        w.run = scope.name
        let reply = try withCoordinator { try conn.request(.why(w)) }
        guard case .whyReply(let r) = reply else { throw ExitCode(3) }
        print("\(r.run.isEmpty ? "" : r.run + "/")\(r.opID): \(stateName(r.state, cancelled: r.cancelled))")
        if !r.waitingOn.isEmpty { print("  waiting for: \(r.waitingOn.joined(separator: ", "))") }
        for line in r.reasons { print("  \(line)") }
    }
}

struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel operations (cooperatively if running), every operation of a queue, or a whole run.",
        discussion: """
            A cancelled operation counts as finished for its dependents (they run) unless --cascade. \
            `opctl cancel --run R` with no ids cancels every unfinished operation of run R.
            """)
    @OptionGroup var connection: Connection
    @OptionGroup var scope: RunScope
    @Argument(help: "Operation ids (OP in the --run scope, or RUN/OP).") var ids: [String] = []
    @Flag(help: "Also cancel every operation that depends on them, transitively.") var cascade = false
    @Option(help: "Cancel every unfinished operation of this queue (cancelAllOperations).") var queue: String?

    func validate() throws {
        if !ids.isEmpty && queue != nil { throw ValidationError("give operation ids or --queue, not both") }
        if ids.isEmpty && queue == nil && scope.run == nil {
            throw ValidationError("give operation ids, --queue, or --run (to cancel a whole run)")
        }
        if queue != nil && cascade { throw ValidationError("--cascade goes with operation ids") }
        if queue != nil && scope.run != nil { throw ValidationError("give --queue or --run, not both") }
    }

    func run() throws {
        var c = WireCancelOps()
        c.opIds = ids.isEmpty ? [] : try unfinished(ids)
        if !ids.isEmpty && c.opIds.isEmpty { return }   // every one had finished already: said above
        c.cascade = cascade
        c.queue = queue ?? ""
        c.run = queue == nil ? scope.name : ""
        let done = queue.map { "cancelled queue \($0)" } ?? (ids.isEmpty ? "cancelled run \(c.run)" : "cancel requested")
        try sendAck(connection, .cancelOps(c), done: done)
    }
}

extension Cancel {
    /// The ids that have not finished; those that have are said on stdout (a cancel cannot change them).
    /// Unknown ids are kept, so the coordinator names them.
    func unfinished(_ ids: [String]) throws -> [String] {
        let conn = try withCoordinator { try connection.connect() }
        var s = WireStatus()
        s.opIds = ids
        s.run = scope.name
        guard case .statusReply(let r) = try withCoordinator({ try conn.request(.status(s)) }) else { throw ExitCode(3) }
        var finished: [String: String] = [:]
        for o in r.ops where o.state == .finished {
            finished[o.id] = outcomeName(o.outcome)
            finished[o.run.isEmpty ? o.id : "\(o.run)/\(o.id)"] = outcomeName(o.outcome)
        }
        var left: [String] = []
        for id in ids {
            if let outcome = finished[id] { print("\(id) had already finished (\(outcome)): nothing to cancel") } else { left.append(id) }
        }
        return left
    }
}

struct Suspend: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Suspend a queue: nothing new starts; running operations go on.")
    @OptionGroup var connection: Connection
    @Argument(help: "Queue name.") var queue: String
    func run() throws { try queueControl(connection, queue, suspended: true) }
}

struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Resume a suspended queue.")
    @OptionGroup var connection: Connection
    @Argument(help: "Queue name.") var queue: String
    func run() throws { try queueControl(connection, queue, suspended: false) }
}

struct Limit: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Set a queue's cluster-wide maxConcurrentOperationCount (-1 = unlimited).")
    @OptionGroup var connection: Connection
    @Argument(help: "Queue name.") var queue: String
    @Argument(help: "Operations at once, or 'unlimited' (-1, written '-- -1').") var count: String

    var limit: Int? { count == "unlimited" ? -1 : Int(count) }

    func validate() throws {
        guard let n = limit, n >= -1 else { throw ValidationError("count must be -1 or ≥ 0 (or 'unlimited'), got '\(count)'") }
        _ = n
    }

    func run() throws { try queueControl(connection, queue, limit: limit ?? -1) }
}

struct Priority: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change an operation's queuePriority (veryLow, low, normal, high, veryHigh or -8/-4/0/4/8).")
    @OptionGroup var connection: Connection
    @OptionGroup var scope: RunScope
    @Argument(help: "Operation id (OP in the --run scope, or RUN/OP).") var id: String
    @Argument(help: "New priority.") var level: String
    @Flag(help: "Also raise its unfinished dependencies, so they are not what holds it back.") var inherit = false

    func run() throws {
        let names = ["verylow": -8, "low": -4, "normal": 0, "high": 4, "veryhigh": 8]
        guard let p = names[level.lowercased()] ?? Int(level), [-8, -4, 0, 4, 8].contains(p) else {
            throw ValidationError("unknown priority '\(level)'; use veryLow, low, normal, high, veryHigh or -8, -4, 0, 4, 8")
        }
        var s = WireSetPriority()
        s.opIds = [id]
        s.priority = Int32(p)
        s.inherit = inherit
        s.run = scope.name
        try sendAck(connection, .setPriority(s), done: "priority of \(id) set to \(priorityName(Int32(p)))")
    }
}

func queueControl(_ connection: Connection, _ queue: String, suspended: Bool? = nil, limit: Int? = nil) throws {
    var q = WireQueueControl()
    q.settings.name = queue
    if let suspended { q.settings.suspended = suspended }
    if let limit { q.settings.maxConcurrent = Int32(limit) }
    let what = suspended.map { $0 ? "suspended" : "resumed" } ?? "limit set to \(limit ?? -1)"
    try sendAck(connection, .queue(q), done: "queue \(queue) \(what)")
}

func sendAck(_ connection: Connection, _ message: Message, done: String) throws {
    let conn = try withCoordinator { try connection.connect() }
    let reply = try withCoordinator { try conn.request(message) }
    guard case .ack(let a) = reply else { throw ExitCode(3) }
    print(done + (a.affected != 1 ? " (\(a.affected) affected)" : ""))
    if a.leftAlone > 0 {
        print("\(a.leftAlone) operation(s) in queues outside your key's scopes were left alone (ask an admin to act on them)")
    }
    if !a.notFound.isEmpty {
        printError("opctl: unknown: \(a.notFound.joined(separator: ", "))")
        throw ExitCode.notFound
    }
}

struct Workers: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List connected workers with their slots, load and tags.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print machine-readable JSON.") var json = false

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        let reply = try withCoordinator { try conn.request(.workers) }
        guard case .workersReply(let r) = reply else { throw ExitCode(3) }
        if let warning = insecureWarning(r.security) { printError(warning) }
        if json {
            printJSON(r.workers.map { ["id": $0.workerID, "name": $0.name, "session": $0.session, "slots": $0.slots,
                                       "running": $0.running, "in_flight": $0.inFlight,
                                       "credit": $0.credit, "tags": $0.tags, "kinds": $0.kinds,
                                       "connected_us": $0.connectedUs, "last_seen_us": $0.lastSeenUs,
                                       "key": $0.keyName] as [String: Any] })
            return
        }
        // RUNNING: handlers running (≤ SLOTS); IN_FLIGHT also counts operations prefetched there.
        // KEY: the allow file's name for the key it connected with (only with CURVE).
        let keyed = r.security == "curve"
        var rows = [["ID", "SESSION", "NAME"] + (keyed ? ["KEY"] : []) + ["SLOTS", "RUNNING", "IN_FLIGHT", "CREDIT", "TAGS", "KINDS"]]
        for w in r.workers {
            rows.append([w.workerID, "\(w.session)", w.name] + (keyed ? [w.keyName] : [])
                        + ["\(w.slots)", "\(w.running)", "\(w.inFlight)", "\(w.credit)",
                           w.tags.joined(separator: ","), w.kinds.joined(separator: ",")])
        }
        printTable(rows)
    }
}
