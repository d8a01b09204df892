import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// Holders of valid but limited keys, on real processes over CURVE (issue 23, PROTOCOL.md §12 "A holder
/// of a limited key"): each finding's repro, which must be refused or contained.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct LimitedKeyIntegrationTests {
    let opctl = Binaries.path("opctl")

    /// Finding 1: a worker key scoped to `tag:cpu` registers listing finished attempts of ops it was never
    /// sent (one pinned to another key, one needing a tag it may not claim). Nothing is taken back: the
    /// ops run on the workers that may run them, the dependent reads the real result, the log names the key.
    @Test func aWorkerKeyCannotReportResultsOfWorkItWasNeverSent() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("cpu", roles: "worker", scopes: ["tag:cpu"])
        var pinned = op("pinned", kind: "echo", payload: "real")
        pinned.requires = ["key:worker"]
        var gpu = op("gpu", kind: "echo", payload: "real-gpu")
        gpu.requires = ["gpu"]
        #expect(try c.submit([pinned, gpu, op("use", kind: "echo", after: ["pinned"])], run: "sec").accepted)
        let forger = try c.connect(as: "cpu")
        func forged(_ id: String) -> WireFinishedRecord {
            .with { $0.opID = "sec/\(id)"; $0.attempt = 1; $0.succeeded = Data("FORGED".utf8) }
        }
        _ = try forger.send(.hello(.with {
            $0.protocolVersion = 1; $0.name = "forger"; $0.slots = 1; $0.kinds = ["echo", "noop"]; $0.tags = ["cpu"]
            $0.finished = [forged("pinned"), forged("gpu")]
        }))
        try c.waitUntil("the forger's claims refused and logged", timeout: 10) {
            c.logs().contains("(key 'cpu') claimed 2 attempt(s) it may not claim")
        }
        let before = try c.status(["sec/pinned", "sec/gpu", "sec/use"])
        #expect(before["pinned"]?.state == .ready && before["gpu"]?.state == .ready, "\(before)")
        #expect(before["use"]?.state == .pending)
        // The workers that may run them do; the dependent's input is the real result.
        try c.startWorker("w1", slots: 2, tags: ["gpu"])
        _ = try c.wait(["sec/pinned", "sec/gpu", "sec/use"])
        let after = try c.status(["sec/pinned", "sec/gpu", "sec/use"], withResults: true)
        #expect(after["pinned"]?.succeededResult == "real" && after["pinned"]?.workerKey == "worker", "\(String(describing: after["pinned"]))")
        #expect(after["gpu"]?.succeededResult == "real-gpu")
        #expect(after["use"]?.isSucceeded == true)
    }

    /// Finding 2: a `submit team-a/*` key names team-b's op with a run context of its own run
    /// (`--run runA runC/b2`): the check decides on the op the request resolves to, and refuses.
    /// Finding 5: its cascade stops at team-b's dependents, and the reply says how many were left alone.
    @Test func scopesDecideOnTheResolvedOperationAndCascadesStopAtThem() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("team-a", roles: "submit", scopes: ["team-a/*"])
        try c.addKey("team-b", roles: "submit", scopes: ["team-b/*"])
        try c.startWorker("w1", slots: 4)
        func submit(_ key: String, _ ops: [WireOperation], run: String) throws {
            var s = WireSubmit()
            s.operations = ops
            s.run = run
            guard case .submitReply(let r) = try c.connect(as: key).request(.submit(s)), r.accepted else {
                throw ClusterError("\(key) could not submit run \(run)")
            }
        }
        try submit("team-a", [op("a1", queue: "team-a/q")], run: "runA")
        try submit("team-b", [shell("b2", "sleep 30", queue: "team-b/q"), op("b3", kind: "noop", after: ["b2"], queue: "team-b/q")], run: "runC")
        try submit("team-a", [shell("root", "sleep 30", queue: "team-a/q"), op("mine", after: ["root"], queue: "team-a/q")], run: "runE")
        try submit("team-b", [op("theirs", after: ["runE/root"], queue: "team-b/q")], run: "runF")
        try c.waitUntil("b2 and root running", timeout: 20) {
            let s = try c.status(["runC/b2", "runE/root"])
            return s["b2"]?.state == .executing && s["root"]?.state == .executing
        }
        for args in [["cancel", "--run", "runA", "runC/b2"], ["priority", "--run", "runA", "runC/b3", "veryHigh"]] {
            let r = try CommandLineTests.run(opctl, args + ["--coordinator", c.endpoint] + c.keyArguments("team-a"), timeout: 30)
            #expect(r.status != 0 && r.stderr.contains("outside the scope of key 'team-a'"), "\(args): \(r.status) \(r.stdout) \(r.stderr)")
        }
        let b = try c.status(["runC/b2", "runC/b3"])
        #expect(b["b2"]?.state == .executing && b["b3"]?.priority == 0, "\(b)")
        // Its cascade: its own dependent is cancelled, team-b's is left alone (and said so).
        let r = try CommandLineTests.run(opctl, ["cancel", "--cascade", "runE/root", "--coordinator", c.endpoint] + c.keyArguments("team-a"), timeout: 30)
        #expect(r.status == 0 && r.stdout.contains("1 operation(s) in queues outside your key's scopes were left alone"), "\(r.stdout) \(r.stderr)")
        _ = try c.wait(["runE/root", "runF/theirs"])
        #expect(try c.status(["runE/mine"])["mine"]?.isCancelledOutcome == true)
        let theirs = try c.status(["runF/theirs"])["theirs"]
        #expect(theirs?.isSucceeded == true, "team-b's dependent runs after its cancelled input: \(String(describing: theirs))")
    }

    /// Finding 3: a team-a key cannot append to team-b's run; team-b can.
    /// Finding 4: a `submit` key's graph may set a queue's settings when it creates the queue, not change an
    /// existing one (an admin's `limit`/`suspend` stays), and is told which field needs admin.
    @Test func runsAndQueueSettingsBelongToTheirOwners() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("team-a", roles: "submit", scopes: ["team-a/*", "shared/*"])
        try c.addKey("team-b", roles: "submit", scopes: ["shared/*"])
        func submit(_ key: String, _ ops: [WireOperation], queues: [WireQueueSettings] = [], run: String, append: Bool) throws -> WireSubmitReply {
            var s = WireSubmit()
            s.operations = ops
            s.queues = queues
            s.run = run
            s.append = append
            guard case .submitReply(let r) = try c.connect(as: key).request(.submit(s)) else { throw ClusterError("no SUBMIT-REPLY") }
            return r
        }
        #expect(try submit("team-b", [op("d1", queue: "shared/q")], run: "runD", append: false).accepted)
        let intruder = try submit("team-a", [op("x", queue: "shared/q")], run: "runD", append: true)
        #expect(!intruder.accepted && intruder.errors.contains { $0.message.contains("run runD was submitted by 'team-b'") }, "\(intruder)")
        #expect(try submit("team-b", [op("d2", queue: "shared/q")], run: "runD", append: true).accepted)

        // A queue team-a creates with its settings; an admin changes it; team-a's graph may not change it back.
        #expect(try submit("team-a", [op("q1", queue: "team-a/q")], queues: [queueSettings("team-a/q", maxConcurrent: 7, suspended: false)],
                           run: "runQ1", append: false).accepted)
        let limit = try CommandLineTests.run(opctl, ["limit", "team-a/q", "2", "--coordinator", c.endpoint] + c.keyArguments("admin"), timeout: 30)
        #expect(limit.status == 0, "\(limit.stderr)")
        #expect(throws: Never.self) {
            do {
                let again = try submit("team-a", [op("q2", queue: "team-a/q")],
                                       queues: [queueSettings("team-a/q", maxConcurrent: 7, suspended: true)], run: "runQ2", append: false)
                Issue.record("accepted: \(again)")
            } catch ClientError.server(let code, let text) {
                #expect(code == .unauthorized && text.contains("queue 'team-a/q' exists with maxConcurrent 2; this submission sets it to 7"), "\(text)")
            }
        }
        let counts = try c.statusReply().queues.first { $0.name == "team-a/q" }
        #expect(counts?.maxConcurrent == 2 && counts?.suspended == false, "\(String(describing: counts))")
        // The same settings as now are no change: accepted.
        #expect(try submit("team-a", [op("q3", queue: "team-a/q")], queues: [queueSettings("team-a/q", maxConcurrent: 2)],
                           run: "runQ3", append: false).accepted)
    }
}
