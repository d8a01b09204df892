import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Wait: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until operations (or a whole run, a whole queue, or everything) have finished.",
        discussion: """
            With --run R and no ids, it waits for run R and exits by its outcome only, whatever other runs do.
            Exit status 0 if all succeeded, 1 if any failed or was cancelled, 4 on timeout (also when the \
            coordinator could not be reached until then), 3 if it could not be reached at first (within \
            --request-timeout), 5 if it does not know (or no longer knows) the operations.
            If the connection to the coordinator is lost while waiting (it stopped or restarted, or the \
            network failed; ZMTP heartbeats notice a frozen or cut-off coordinator within about 6 s), opctl \
            says so on stderr, keeps reconnecting until --timeout (without one, until it is back) and asks \
            again — given several endpoints (an --ha group), at the next one, and at the leader a standby names. \
            A coordinator restarted with its state directory knows them still; one started without \
            it (--ephemeral, another --state-dir) does not: then opctl says how many and exits 5 at once.
            """)

    @OptionGroup var connection: Connection

    @OptionGroup var scope: RunScope

    @Argument(help: "Operation ids (OP in the --run scope, or RUN/OP); none means the --run scope, else every operation submitted so far.")
    var ids: [String] = []

    @Option(help: "Wait for every operation of this queue instead.")
    var queue: String?

    @Option(help: "Give up after this many seconds (exit 4), also while the coordinator is unreachable.")
    var timeout: Double?

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    func validate() throws {
        if queue != nil && !ids.isEmpty { throw ValidationError("give operation ids or --queue, not both") }
        if queue != nil && scope.run != nil { throw ValidationError("give --queue or --run, not both") }
        if let t = timeout, t < 0 { throw ValidationError("--timeout must be ≥ 0") }
    }

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        let result = try WaitCommandCore.wait(conn, ids: ids, queue: queue, run: queue == nil ? scope.name : "",
                                              timeout: timeout, json: json)
        throw result.exitCode
    }
}

/// WAIT shared by `wait` and `submit --wait`: every accepted operation is waited for (ids go in pages
/// of at most `maxBatchRecords`, one WAIT each), against one deadline, across lost connections.
enum WaitCommandCore {
    struct Result {
        var succeeded = 0, failed = 0, cancelled = 0, pending = 0
        var timedOut = false
        /// The deadline passed while the coordinator could not be reached.
        var unreachable = false
        var exitCode: ExitCode {
            if timedOut { return ExitCode(4) }
            return failed + cancelled > 0 ? ExitCode(1) : .success
        }
    }

    /// One WAIT's target: a page of ids (resolved in `run`), a queue, or a whole run.
    struct Target {
        var ids: [String] = []
        var queue = ""
        var run = ""
    }

    /// How long after the deadline the coordinator's timed-out WAIT-REPLY may take to arrive.
    static let replyGrace: Duration = .seconds(5)

    static func wait(_ conn: CoordinatorConnection, ids: [String], queue: String?, run: String = "", timeout: Double?,
                     json: Bool) throws -> Result {
        let deadline = timeout.map { ContinuousClock.now + .microseconds(Int64(($0 * 1_000_000).rounded())) }
        var waiter = Waiter(conn: conn, deadline: deadline)
        var result = Result()
        var outcomes: [WireOpOutcome] = []
        if try waiter.firstContact() {
            // No ids and no queue: every queue the coordinator knows, one after another.
            var targets: [Target] = []
            if let queue { targets = [Target(queue: queue)] }
            else if !ids.isEmpty {
                targets = stride(from: 0, to: ids.count, by: WireLimits.maxBatchRecords).map {
                    Target(ids: Array(ids[$0..<min(ids.count, $0 + WireLimits.maxBatchRecords)]), run: run)
                }
            } else if !run.isEmpty {
                targets = [Target(run: run)]
            } else {
                let reply = try withCoordinator { try conn.request(.status(WireStatus())) }
                guard case .statusReply(let s) = reply else { throw ExitCode(3) }
                targets = s.queues.map { Target(queue: $0.name) }
            }
            for i in targets.indices {
                guard let r = try waiter.wait(for: i, of: targets) else {
                    // The deadline passed with the coordinator away or silent: what is left is unfinished.
                    result.timedOut = true
                    result.pending += targets[i...].reduce(0) { $0 + $1.ids.count }
                    break
                }
                if !r.notFound.isEmpty {
                    printError("opctl: unknown operation(s): \(r.notFound.joined(separator: ", "))")
                    throw ExitCode.notFound
                }
                outcomes += r.outcomes
                result.succeeded += Int(r.succeededCount)
                result.failed += Int(r.failedCount)
                result.cancelled += Int(r.cancelledCount)
                result.pending += Int(r.pendingCount)
                if r.timedOut { result.timedOut = true }
            }
        } else {
            result.timedOut = true
            result.pending = ids.count
        }
        result.unreachable = waiter.unreachable
        if let note = waiter.gaveUpNote { printError(note) }
        if json {
            printJSON(["succeeded": result.succeeded, "failed": result.failed, "cancelled": result.cancelled,
                       "pending": result.pending, "timed_out": result.timedOut, "unreachable": result.unreachable])
        } else {
            var line = "finished: \(result.succeeded) succeeded, \(result.failed) failed, \(result.cancelled) cancelled"
            if result.timedOut { line += "; timed out with \(result.pending) still unfinished" }
            print(line)
            for o in outcomes {
                switch o.outcome.result {
                case .failed(let e)?: print("  failed    \(o.opID): \(firstLine(e))")
                case .cancelled(let r)?: print("  cancelled \(o.opID): \(firstLine(r))")
                default: break
                }
            }
        }
        return result
    }
}

/// Issues WAITs and keeps them alive: a lost connection is announced on stderr, waited out until the
/// deadline (none: until the coordinator is back), and the WAIT asked again — unless the coordinator
/// that answers no longer knows what is awaited (started without its journal), which ends opctl at once.
struct Waiter {
    let conn: CoordinatorConnection
    let deadline: ContinuousClock.Instant?
    /// The deadline passed while the coordinator could not be reached.
    private(set) var unreachable = false
    /// Why opctl gave up before the coordinator answered, for stderr.
    private(set) var gaveUpNote: String?
    /// Lost connections said on stderr so far (those before the wait, e.g. while submitting, are not its own).
    private var announcedLosses: Int

    init(conn: CoordinatorConnection, deadline: ContinuousClock.Instant?) {
        self.conn = conn
        self.deadline = deadline
        announcedLosses = conn.link.losses
    }

    /// Waits for the first connection: at most --request-timeout (a wrong address should not wait
    /// forever) or until the deadline if that is sooner (but long enough to connect for --timeout 0).
    /// False at the deadline; at the request timeout the usual "could not connect" error (exit 3).
    mutating func firstContact() throws -> Bool {
        let now = ContinuousClock.now
        let byRequestTimeout = now + conn.timeout
        var until = byRequestTimeout
        if let deadline { until = min(until, max(deadline, now + .seconds(1))) }
        // Within the request timeout a refused connection is an answer (nothing listens there), as
        // for every other command; waiting until an earlier --timeout, it may be a restart: wait it out.
        if try withCoordinator({ try conn.waitForLink(until: until, refusedIsFinal: until == byRequestTimeout) }) { return true }
        guard until < byRequestTimeout else {
            throw report(ClientError.timeout(.wait, conn.endpoint, connected: false))
        }
        unreachable = true
        if announceLoss(), let since = conn.link.downSince {
            gaveUpNote = "opctl: gave up at the --timeout: the coordinator at \(conn.endpoint) did not come back "
                + "(unreachable for \(seconds(ContinuousClock.now - since)) s)"
        } else {
            gaveUpNote = "opctl: gave up at the --timeout: could not reach the coordinator at \(conn.endpoint)"
        }
        return false
    }

    /// Says on stderr that the connection was lost, once per loss; false if none was.
    @discardableResult
    private mutating func announceLoss() -> Bool {
        guard conn.link.losses > announcedLosses else { return announcedLosses > 0 }
        announcedLosses = conn.link.losses
        printError("opctl: lost the connection to the coordinator at \(conn.endpoint) while waiting (it stopped or restarted, "
                   + "or the network failed); reconnecting " + (deadline == nil ? "until it is back" : "until the --timeout"))
        return true
    }

    /// The reply to a WAIT for `targets[i]`, asked again after every lost connection; nil when the
    /// deadline passed first. `targets[i...]` is what is still awaited.
    mutating func wait(for i: Int, of targets: [WaitCommandCore.Target]) throws -> WireWaitReply? {
        while true {
            // Known to be down (lost before this WAIT): wait it out first, so the loss is announced.
            if try !conn.waitForLink(until: .now) {
                guard try reconnect(still: targets[i...]) else { return nil }
            }
            var w = WireWait()
            w.opIds = targets[i].ids
            w.queue = targets[i].queue
            w.run = targets[i].run
            if let deadline { w.timeoutUs = max(0, micros(deadline - .now)) }
            let id = try withCoordinator { try conn.send(.wait(w)) }
            do {
                return try awaitReply(id)
            } catch ClientError.connectionLost {
                guard try reconnect(still: targets[i...]) else { return nil }
            } catch ClientError.server(.notLeader, let text) where deadline.map({ ContinuousClock.now < $0 }) ?? true {
                // A standby (issue 29): wait at the leader it names, as every other request goes there.
                guard try conn.followNotLeader(text, until: deadline) else { throw report(ClientError.server(.notLeader, text)) }
                guard try withCoordinator({ try conn.waitForLink(until: deadline) }) else {
                    unreachable = true
                    gaveUpNote = "opctl: gave up at the --timeout: could not reach the leader at \(conn.endpoint)"
                    return nil
                }
            } catch ClientError.server(.notFound, let text) where conn.link.losses > 0 {
                // Asked while the coordinator was away, and a new one answered.
                announceLoss()
                try checkStillKnown(targets[i...])
                printError("opctl: coordinator refused the request (notFound): \(text)")
                throw ExitCode.notFound
            } catch let error as ClientError {
                throw report(error)
            }
        }
    }

    /// The reply to WAIT `id`; nil when the deadline passed and no answer can be expected: the
    /// coordinator is unreachable, or it is connected but did not answer within `replyGrace` after it.
    private mutating func awaitReply(_ id: UInt32) throws -> WireWaitReply? {
        while true {
            // Wake at the deadline: if the coordinator is unreachable then, nobody will answer.
            var until: ContinuousClock.Instant?
            if let deadline { until = ContinuousClock.now < deadline ? deadline : deadline + WaitCommandCore.replyGrace }
            if let reply = try conn.reply(to: id, until: until) {
                guard case .waitReply(let r) = reply else {
                    throw report(ClientError.unexpectedReply(reply.command, expected: "WAIT-REPLY"))
                }
                return r
            }
            guard let deadline else { continue }
            if !conn.link.isUp {
                unreachable = true
                let down = conn.link.downSince.map { " (unreachable for \(seconds(ContinuousClock.now - $0)) s)" } ?? ""
                gaveUpNote = "opctl: gave up at the --timeout: the coordinator at \(conn.endpoint) could not be reached\(down)"
                return nil
            }
            if ContinuousClock.now >= deadline + WaitCommandCore.replyGrace {
                gaveUpNote = "opctl: gave up: the coordinator at \(conn.endpoint) is connected but did not answer the WAIT by the --timeout"
                return nil
            }
        }
    }

    /// After a lost connection: says so, waits for the coordinator to come back (until the deadline),
    /// and checks that it still knows what is awaited. False when the deadline passed first.
    private mutating func reconnect(still remaining: ArraySlice<WaitCommandCore.Target>) throws -> Bool {
        let since = conn.link.downSince ?? .now
        announceLoss()
        // Several endpoints (an --ha group): go on at the next; the one lost may stay silent (cut off).
        if try conn.moveToNextEndpoint() { announcedLosses = conn.link.losses }
        guard try conn.waitForLink(until: deadline) else {
            unreachable = true
            gaveUpNote = "opctl: gave up at the --timeout: the coordinator at \(conn.endpoint) did not come back "
                + "(unreachable for \(seconds(ContinuousClock.now - since)) s)"
            return false
        }
        printError("opctl: reconnected to the coordinator at \(conn.endpoint) after \(seconds(ContinuousClock.now - since)) s")
        try checkStillKnown(remaining)
        return true
    }

    /// Exits 3 if the coordinator does not know some of what is awaited: after a restart it has no
    /// record of anything submitted before (no journal yet), so waiting for it would never end.
    private func checkStillKnown(_ remaining: ArraySlice<WaitCommandCore.Target>) throws {
        var unknown = 0, total = 0
        var unknownQueues: [String] = []
        func status(_ s: WireStatus) throws -> WireStatusReply {
            let reply = try withCoordinator { try conn.request(.status(s)) }
            guard case .statusReply(let r) = reply else { throw ExitCode(3) }
            return r
        }
        for t in remaining {
            if !t.queue.isEmpty {
                var s = WireStatus()
                s.queue = t.queue
                if try status(s).notFound.contains(t.queue) { unknownQueues.append(t.queue) }
                continue
            }
            // Small pages: each known operation comes back as a whole record. (A whole run that is gone
            // is refused by the WAIT itself, NOT_FOUND.)
            for start in stride(from: 0, to: t.ids.count, by: 512) {
                var s = WireStatus()
                s.opIds = Array(t.ids[start..<min(t.ids.count, start + 512)])
                s.run = t.run
                unknown += try status(s).notFound.count
                total += s.opIds.count
            }
        }
        guard unknown > 0 || !unknownQueues.isEmpty else { return }
        var what: [String] = []
        if unknown > 0 { what.append("\(unknown) of the \(total) operation\(total == 1 ? "" : "s") still awaited") }
        if !unknownQueues.isEmpty {
            what.append("queue\(unknownQueues.count == 1 ? "" : "s") \(unknownQueues.joined(separator: ", "))")
        }
        printError("opctl: the coordinator at \(conn.endpoint) restarted and no longer knows \(what.joined(separator: " and ")) "
                   + "(it was started without its state directory, or the run was evicted); their outcome is unknown")
        throw ExitCode.notFound
    }
}

private func micros(_ d: Duration) -> Int64 {
    d.components.seconds * 1_000_000 + d.components.attoseconds / 1_000_000_000_000
}

/// "2.5" for 2.5 s.
func seconds(_ d: Duration) -> String {
    String(format: "%.1f", Double(micros(d)) / 1_000_000)
}

func firstLine(_ s: String) -> String {
    let line = s.split(separator: "\n", omittingEmptySubsequences: true).last.map(String.init) ?? ""
    return line.count > 160 ? String(line.prefix(157)) + "..." : line
}

func printJSON(_ object: Any) {
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
        print(String(decoding: data, as: UTF8.self))
    }
}
