import ArgumentParser
import Foundation
import OpClient
import WireProtocol

/// `opctl logs`: the output the coordinator keeps of an operation's attempts (LOGS, PROTOCOL.md §5.26).
struct Logs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the stdout and stderr of an operation's attempts (shell operations), oldest attempt first.",
        discussion: """
            Each attempt is headed with its number, worker and outcome, then its stdout and its stderr. \
            Workers send the last bytes of each stream (opworker --log-tail-bytes, 16 KiB by default); \
            what came before is counted ("… N bytes dropped"). The coordinator keeps them in memory only, \
            within opcoord --log-store-bytes (the oldest attempts go first, which is said), and not across \
            its restarts. --follow polls until the operation has finished (at most --timeout seconds), \
            printing each attempt as it finishes.
            """)
    @OptionGroup var connection: Connection
    @OptionGroup var scope: RunScope
    @Argument(help: "Operation id (OP in the --run scope, or RUN/OP).") var id: String
    @Option(help: "Only this attempt (1 is the first).") var attempt: Int?
    @Flag(help: "Keep polling until the operation has finished, printing attempts as they finish.") var follow = false
    @Option(help: "With --follow: give up after this many seconds (exit 4).") var timeout: Double = 3600
    @Option(help: "With --follow: seconds between polls.") var interval: Double = 0.5
    @Flag(help: "Print the LogsReply as JSON (protobuf JSON mapping; stdout and stderr are base64).") var json = false

    func validate() throws {
        if let attempt, attempt < 1 { throw ValidationError("--attempt must be ≥ 1") }
        if timeout <= 0 { throw ValidationError("--timeout must be > 0") }
        if interval <= 0 || interval > 60 { throw ValidationError("--interval must be in (0, 60] seconds") }
        if follow && json { throw ValidationError("--follow prints text; leave out --json") }
    }

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        var l = WireLogs()
        l.opID = id
        l.run = scope.name
        l.attempt = UInt32(attempt ?? 0)
        func ask() throws -> WireLogsReply {
            let reply = try withCoordinator { try conn.request(.logs(l)) }
            guard case .logsReply(let r) = reply else {
                printError("opctl: unexpected reply \(reply.command) to LOGS")
                throw ExitCode(3)
            }
            return r
        }
        var r = try ask()
        if json {
            print(Message.logsReply(r).jsonBody)
            return
        }
        // After the first reply, name the op exactly: a bare id could resolve to a newer run later.
        l.opID = r.run.isEmpty ? r.opID : "\(r.run)/\(r.opID)"
        l.run = ""
        var shown = Set<String>()
        func show(_ r: WireLogsReply) {
            for a in r.attempts where shown.insert("\(a.attempt)/\(a.part)").inserted {
                print(Self.text(a), terminator: "")
            }
        }
        if r.evicted { print("(earlier output of \(l.opID) was evicted: opcoord --log-store-bytes)") }
        show(r)
        guard follow else {
            if r.attempts.isEmpty {
                print("no output kept for \(l.opID)" + (attempt.map { " attempt \($0)" } ?? "")
                      + " (output is kept in the coordinator's memory only: not across its restarts)")
            }
            return
        }
        let deadline = Date().addingTimeInterval(timeout)
        while try !finished(conn) {
            guard Date() < deadline else {
                printError("opctl: \(l.opID) has not finished after \(timeout) s")
                throw ExitCode(4)
            }
            Thread.sleep(forTimeInterval: interval)   // a poll interval, not a synchronisation
            r = try ask()
            show(r)
        }
        show(try ask())   // the attempt that finished it
        if shown.isEmpty { print("no output kept for \(l.opID)") }
    }

    /// Whether the operation has finished (STATUS).
    private func finished(_ conn: CoordinatorConnection) throws -> Bool {
        var s = WireStatus()
        s.opIds = [id]
        s.run = scope.name
        let reply = try withCoordinator { try conn.request(.status(s)) }
        guard case .statusReply(let st) = reply, let op = st.ops.first else { return true }
        return op.state == .finished
    }

    /// One attempt: a header line, then stdout and stderr, each said when empty and when cut.
    static func text(_ a: WireAttemptLog) -> String {
        var out = "=== attempt \(a.attempt)" + (a.part > 0 ? " part \(a.part)" : "")
            + " on \(a.workerID.isEmpty ? "?" : a.workerID): \(a.outcome.isEmpty ? "?" : a.outcome)"
            + (a.finishedUs > 0 ? " at \(TimeText.clock(a.finishedUs))" : "") + " ===\n"
        for (name, bytes, dropped) in [("stdout", a.stdout, a.stdoutDropped), ("stderr", a.stderr, a.stderrDropped)] {
            out += "--- \(name)" + (dropped > 0 ? " (… \(dropped) bytes dropped before)" : "") + (bytes.isEmpty ? " (empty)" : "") + " ---\n"
            if !bytes.isEmpty {
                let s = String(decoding: bytes, as: UTF8.self)
                out += s.hasSuffix("\n") ? s : s + "\n"
            }
        }
        return out
    }
}

/// `opctl story`: an operation's transitions as the coordinator's core recorded them (STORY, §5.27).
struct Story: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an operation's transitions, oldest first: time, +ms since submission, stimulus, event, detail.",
        discussion: """
            The stimulus is the number of the coordinator input that caused the transition (inputs that \
            share it happened together). The story is bounded (64 entries per operation, a shared ring \
            overall): "earlier entries were overwritten" says when the start is missing. It is not \
            journalled: after a coordinator restart, a 'restarted' entry follows what was rebuilt from the \
            journal (submission, the last ready, dispatch and start, the finish; stimulus #0); retries and \
            requeues before it are not recorded.
            """)
    @OptionGroup var connection: Connection
    @OptionGroup var scope: RunScope
    @Argument(help: "Operation id (OP in the --run scope, or RUN/OP).") var id: String
    @Flag(help: "Print the StoryReply as JSON (protobuf JSON mapping).") var json = false

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        var s = WireStory()
        s.opID = id
        s.run = scope.name
        let reply = try withCoordinator { try conn.request(.story(s)) }
        guard case .storyReply(let r) = reply else {
            printError("opctl: unexpected reply \(reply.command) to STORY")
            throw ExitCode(3)
        }
        if json {
            print(Message.storyReply(r).jsonBody)
            return
        }
        print(Self.text(r), terminator: "")
    }

    static func text(_ r: WireStoryReply) -> String {
        var out = "\(r.run.isEmpty ? "" : r.run + "/")\(r.opID)\n"
        if r.truncated { out += "  (earlier entries were overwritten)\n" }
        let origin = r.entries.first(where: { $0.event == "submitted" })?.atUs ?? r.entries.first?.atUs ?? 0
        for e in r.entries {
            var what = e.event
            var details: [String] = []
            if e.part > 0 { details.append("part \(e.part)") }
            if e.attempt > 0 { details.append("attempt \(e.attempt)") }
            if !e.workerID.isEmpty { details.append("worker \(e.workerID)") }
            if !e.detail.isEmpty { details.append(e.detail) }
            if !details.isEmpty { what += " " + details.joined(separator: ", ") }
            let plus = Double(e.atUs - origin) / 1000
            out += "  " + TimeText.clock(e.atUs).padding(toLength: 12, withPad: " ", startingAt: 0)
                + String(format: " %+10.1fms", plus) + (e.stimulus == 0 ? "  journal" : "  #\(e.stimulus)").padding(toLength: 10, withPad: " ", startingAt: 0)
                + " " + what + "\n"
        }
        if r.entries.isEmpty { out += "  (no transitions recorded)\n" }
        return out
    }
}
