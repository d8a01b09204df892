import ArgumentParser
import Foundation
import OpClient
import OpSpec
import WireProtocol

struct Submit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Submit a graph file (YAML or JSON; see docs/GRAPHS.md) as a new run.",
        discussion: """
            Every submission is a run with its own id (printed; --run chooses it): the same file submitted \
            twice is two runs that both execute. Other commands name its operations OP with --run (or \
            $OPQ_RUN), or RUN/OP.
            The graph is checked here first and every problem is printed (unknown fields, unknown \
            dependencies, cycles with their members, payloads over 1 MiB and other protocol limits, ...): \
            nothing is sent unless the whole graph passes. The coordinator checks again and accepts or \
            rejects each batch (up to 8192 operations and 16 MiB) as a whole; a graph of several batches \
            has its dependencies on other runs' operations (RUN/OP) checked with the coordinator before the \
            first batch is sent, so an unknown or evicted one stops it with nothing sent. With --wait, every accepted \
            operation is waited for, also across a lost connection (see `opctl wait --help`).
            Each batch carries a submission key of its own. If the connection to the coordinator is lost \
            before a batch is answered (it stopped or restarted, or the network failed), opctl says so on \
            stderr and sends the same batch again when the coordinator is back, until --timeout (without \
            one, --request-timeout per batch); the coordinator applies a key once, so a batch that had \
            arrived is not added twice. Exit 3 if it is not back by then: that batch may or may not have \
            been accepted.
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "Graph file (.yaml, .yml or .json); - reads standard input.")
    var file: String

    @Option(name: .customLong("run"), help: "Name of the new run (letters, digits, '.', '_', '-'; default: chosen by the coordinator, e.g. r-12).")
    var newRun: String?

    @Flag(help: "Wait until every operation has finished; exit 1 unless all succeeded.")
    var wait = false

    @Option(help: "Give up after this many seconds: submitting across a lost coordinator (exit 3), and with --wait, waiting (exit 4).")
    var timeout: Double?

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    @Flag(help: "Submit even if no connected worker offers an operation's kind (it waits for one).")
    var allowUnknownKinds = false

    func run() throws {
        let graph: Graph
        do {
            if file == "-" {
                graph = try GraphFile.load(FileHandle.standardInput, source: "<stdin>")   // read with a bound
            } else {
                graph = try GraphFile.load(path: file)
            }
        } catch {
            printError("opctl: graph rejected:\n\(error)")
            throw ExitCode(2)
        }
        var messages = graph.submitMessages(run: newRun ?? "", submitter: Self.submitter)
        try checkLimits(messages)
        let started = ContinuousClock.now
        let deadline = timeout.map { started + .microseconds(Int64(($0 * 1_000_000).rounded())) }
        let conn = try withCoordinator { try connection.connect() }
        if !allowUnknownKinds { try checkKinds(graph, conn) }
        try checkOtherRuns(messages, conn)
        var accepted = 0
        var warnings: [WireUnplaceable] = []
        var workersConnected = 0
        var runName = newRun ?? ""
        var duplicates = 0
        for k in messages.indices {
            // Later batches join the run the first one created (named by the coordinator unless --run).
            if k > 0, case .submit(var m) = messages[k] { m.run = runName; m.append = true; messages[k] = .submit(m) }
            let r = try submitBatch(messages[k], k, of: messages.count, conn, deadline: deadline)
            if !r.accepted {
                if json {
                    printJSON(["accepted": false, "errors": r.errors.map { ["op": $0.opID, "field": $0.field, "message": $0.message, "related": $0.related] as [String: Any] }])
                } else {
                    printError("opctl: the coordinator rejected the graph (\(r.errors.count) problem\(r.errors.count == 1 ? "" : "s")):")
                    for e in r.errors { printError("  - \(e.message)") }
                    if accepted > 0 { printError("  (\(accepted) operations of earlier batches were accepted)") }
                }
                throw ExitCode(2)
            }
            accepted += Int(r.acceptedCount)
            if r.duplicate { duplicates += 1 }
            runName = r.run
            warnings += r.unplaceable
            workersConnected = Int(r.workers)
        }
        if !json {
            print("run \(runName): submitted \(accepted) operation\(accepted == 1 ? "" : "s") in \(Set(graph.operations.map(\.queue)).count) queue(s)")
            // With no worker at all checkKinds said so already; then every op would be listed here.
            if workersConnected > 0 {
                for w in warnings { printError("opctl: warning: " + unplaceableText(w)) }
            } else if allowUnknownKinds {
                printError("opctl: warning: no worker is connected yet; the operations wait until one joins")
            }
        }
        guard wait else {
            if json {
                printJSON(["accepted": true, "run": runName, "count": accepted, "unplaceable": warnings.map(unplaceableJSON),
                           "duplicate": duplicates > 0])
            }
            return
        }
        let ids = graph.operations.map(\.id)
        // One --timeout for the whole command: the wait gets what submitting left of it.
        let left = deadline.map { max(0, ($0 - .now) / .seconds(1)) }
        let outcome = try WaitCommandCore.wait(conn, ids: ids, queue: nil, run: runName, timeout: left, json: json)
        throw outcome.exitCode
    }

    /// Batch `k` (of `count`) and its reply, sent again with the same submission key after a lost
    /// connection (`CoordinatorConnection.submit`), until `deadline` (none: the request timeout).
    private func submitBatch(_ message: Message, _ k: Int, of count: Int, _ conn: CoordinatorConnection,
                             deadline: ContinuousClock.Instant?) throws -> WireSubmitReply {
        let batch = count == 1 ? "the graph" : "batch \(k + 1) of \(count)"
        var lostAt: ContinuousClock.Instant?
        do {
            let r = try conn.submit(message, until: deadline) { _ in
                if lostAt == nil { lostAt = conn.link.downSince ?? .now }
                printError("opctl: lost the connection to the coordinator at \(conn.endpoint) before it answered \(batch) "
                           + "(it stopped or restarted, or the network failed); sending it again when it is back, until the "
                           + (deadline == nil ? "--request-timeout" : "--timeout"))
            }
            if let lostAt {
                printError("opctl: reconnected to the coordinator at \(conn.endpoint) after \(seconds(ContinuousClock.now - lostAt)) s; "
                           + (r.duplicate ? "it had received \(batch) before (applied once)" : "\(batch) sent again"))
            }
            return r
        } catch let error as ClientError {
            if lostAt != nil {
                printError("opctl: gave up at the " + (deadline == nil ? "--request-timeout" : "--timeout")
                           + ": \(batch) may or may not have been accepted (`opctl runs` shows what the coordinator has)")
            }
            throw report(error)
        }
    }

    /// "user@host" (`Submitter`): shown by `opctl runs`, the default share key without keys.
    static var submitter: String { Submitter.current }

    /// Every operation and every SUBMIT against the protocol's limits before anything is sent: a batch
    /// refused after earlier ones were accepted would leave half a graph on the coordinator.
    private func checkLimits(_ messages: [Message]) throws {
        var problems: [String] = []
        for case .submit(let m) in messages {
            // The batch as a whole first (one encode, as sending it will be); only a batch that fails is
            // gone through operation by operation, so that each one over a limit is named.
            if CoordinatorConnection.problem(with: .submit(m)) == nil { continue }
            for o in m.operations {
                var one = WireSubmit()
                one.operations = [o]
                if case .invalidRequest(_, let why)? = CoordinatorConnection.problem(with: .submit(one)) { problems.append(why) }
            }
            if problems.isEmpty, case .invalidRequest(_, let why)? = CoordinatorConnection.problem(with: .submit(m)) {
                problems.append(why)
            }
        }
        guard !problems.isEmpty else { return }
        printError("opctl: graph rejected: over the protocol's limits (docs/PROTOCOL.md §10); nothing was sent:")
        for p in problems.prefix(20) { printError("  - \(p)") }
        if problems.count > 20 { printError("  (and \(problems.count - 20) more)") }
        throw ExitCode(2)
    }

    /// Dependencies on other runs' operations ("RUN/OP"), all of them before the first batch of a graph
    /// sent in several: the coordinator checks each batch as a whole, so a later batch naming an operation
    /// it does not have (never submitted, or its run evicted) would be refused after earlier batches were
    /// accepted. One STATUS (more only past its reply budget); a key without `view` skips the check.
    private func checkOtherRuns(_ messages: [Message], _ conn: CoordinatorConnection) throws {
        guard messages.count > 1 else { return }   // one batch is accepted or refused whole anyway
        let own = newRun.map { $0 + "/" }
        var refs: [String] = []
        var seen: Set<String> = []
        for case .submit(let m) in messages {
            for o in m.operations {
                for d in o.after where d.contains("/") && !(own.map(d.hasPrefix) ?? false) && seen.insert(d).inserted { refs.append(d) }
            }
        }
        var missing: [String] = []
        var ask = refs
        while !ask.isEmpty {
            var s = WireStatus()
            s.opIds = Array(ask.prefix(WireLimits.maxBatchRecords))
            let reply: Message
            do {
                reply = try conn.request(.status(s))
            } catch ClientError.server(.unauthorized, _) {
                return   // a key that may not read: the batches themselves are checked by the coordinator
            } catch let error as ClientError {
                throw report(error)
            }
            guard case .statusReply(let r) = reply else { throw ExitCode(3) }
            missing += r.notFound
            let answered = s.opIds.count - r.omitted.count
            guard answered > 0 else { break }
            ask = r.omitted + ask.dropFirst(s.opIds.count)
        }
        guard !missing.isEmpty else { return }
        printError("opctl: graph rejected: it depends on operations of other runs that the coordinator does not have "
                   + "(never submitted, or their run was evicted); nothing was sent:")
        for m in missing.prefix(20) { printError("  - \(m)") }
        if missing.count > 20 { printError("  (and \(missing.count - 20) more)") }
        throw ExitCode(2)
    }

    /// A kind no connected worker offers would wait forever: say so before submitting.
    private func checkKinds(_ graph: Graph, _ conn: CoordinatorConnection) throws {
        let reply: Message
        do {
            reply = try conn.request(.workers)
        } catch ClientError.server(.unauthorized, _) {
            return   // a key that may not read: the SUBMIT itself says what it may do
        } catch let error as ClientError {
            throw report(error)
        }
        guard case .workersReply(let r) = reply else { throw ExitCode(3) }
        guard !r.workers.isEmpty else {
            printError("opctl: warning: no worker is connected yet; the operations wait until one joins")
            return
        }
        let offered = Set(r.workers.flatMap(\.kinds))
        let unknown = graph.operations.filter { !offered.contains($0.kind) }
        guard !unknown.isEmpty else { return }
        printError("opctl: graph rejected: no connected worker offers these kinds (workers offer: \(offered.sorted().joined(separator: ", "))):")
        for o in unknown.prefix(20) { printError("  - \(o.id): unknown kind '\(o.kind)'") }
        printError("  (use --allow-unknown-kinds to submit anyway; they wait for a worker with that kind)")
        throw ExitCode(2)
    }
}
