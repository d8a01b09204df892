import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Wait: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until operations (or a whole queue, or everything) have finished.",
        discussion: "Exit status 0 if all succeeded, 1 if any failed or was cancelled, 4 on timeout.")

    @OptionGroup var connection: Connection

    @Argument(help: "Operation ids; none means every operation submitted so far.")
    var ids: [String] = []

    @Option(help: "Wait for every operation of this queue instead.")
    var queue: String?

    @Option(help: "Give up after this many seconds (exit 4).")
    var timeout: Double?

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    func validate() throws {
        if queue != nil && !ids.isEmpty { throw ValidationError("give operation ids or --queue, not both") }
        if let t = timeout, t < 0 { throw ValidationError("--timeout must be ≥ 0") }
    }

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        let result = try WaitCommandCore.wait(conn, ids: ids, queue: queue, timeout: timeout, json: json)
        throw result.exitCode
    }
}

/// WAIT shared by `wait` and `submit --wait`.
enum WaitCommandCore {
    struct Result {
        var succeeded = 0, failed = 0, cancelled = 0, pending = 0
        var timedOut = false
        var exitCode: ExitCode {
            if timedOut { return ExitCode(4) }
            return failed + cancelled > 0 ? ExitCode(1) : .success
        }
    }

    static func wait(_ conn: CoordinatorConnection, ids: [String], queue: String?, timeout: Double?, json: Bool) throws -> Result {
        // No ids and no queue: every queue the coordinator knows, one after another, against one deadline.
        var targets: [(ids: [String], queue: String)] = []
        if let queue { targets = [([], queue)] }
        else if !ids.isEmpty {
            // One WAIT holds at most maxBatchRecords ids: wait for them page by page.
            targets = stride(from: 0, to: ids.count, by: WireLimits.maxBatchRecords).map {
                (Array(ids[$0..<min(ids.count, $0 + WireLimits.maxBatchRecords)]), "")
            }
        }
        else {
            let reply = try withCoordinator { try conn.request(.status(WireStatus())) }
            guard case .statusReply(let s) = reply else { throw ExitCode(3) }
            targets = s.queues.map { ([], $0.name) }
        }
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var result = Result()
        var outcomes: [WireOpOutcome] = []
        for t in targets {
            var w = WireWait()
            w.opIds = t.ids
            w.queue = t.queue
            if let deadline { w.timeoutUs = max(0, Int64(deadline.timeIntervalSinceNow * 1_000_000)) }
            // The reply may legitimately take as long as the wait itself.
            let replyTimeout: Duration = deadline.map { .milliseconds(Int(max(0, $0.timeIntervalSinceNow) * 1000) + 5000) } ?? .seconds(365 * 24 * 3600)
            let reply = try withCoordinator { try conn.request(.wait(w), timeout: replyTimeout) }
            guard case .waitReply(let r) = reply else { throw ExitCode(3) }
            if !r.notFound.isEmpty {
                printError("opctl: unknown operation(s): \(r.notFound.joined(separator: ", "))")
                throw ExitCode(3)
            }
            outcomes += r.outcomes
            result.succeeded += Int(r.succeededCount)
            result.failed += Int(r.failedCount)
            result.cancelled += Int(r.cancelledCount)
            result.pending += Int(r.pendingCount)
            if r.timedOut { result.timedOut = true }
        }
        if json {
            printJSON(["succeeded": result.succeeded, "failed": result.failed, "cancelled": result.cancelled,
                       "pending": result.pending, "timed_out": result.timedOut])
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

func firstLine(_ s: String) -> String {
    let line = s.split(separator: "\n", omittingEmptySubsequences: true).last.map(String.init) ?? ""
    return line.count > 160 ? String(line.prefix(157)) + "..." : line
}

func printJSON(_ object: Any) {
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
        print(String(decoding: data, as: UTF8.self))
    }
}
