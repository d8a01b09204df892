@testable import Coordinator
import Foundation
import Logging
@testable import SchedulerCore
import Testing
import WireProtocol
import ZeroMQ

/// The allow file's grammar and what each role and scope permits (PROTOCOL.md §12). Pure: no sockets.
struct AllowListTests {
    static let keyA = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    static let keyB = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
    static let keyHash = "#ne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"   // Z85 keys may start with '#'

    @Test func linesMapKeysToNamesRolesAndScopes() throws {
        let list = try AllowList.parse("""
            # the team keys
            \(Self.keyA) alice submit,view team-a/* default   # trailing comment
            \(Self.keyB)  gpu-1  worker  tag:gpu tag:ssd
            \(Self.keyHash) hash-key view

            """, source: "allow.txt")
        #expect(list.count == 3)
        let alice = try #require(list.principal(key: Self.keyA))
        #expect(alice.name == "alice" && alice.roles == [.submit, .view])
        #expect(alice.mayUse(queue: "team-a/etl") && alice.mayUse(queue: "default"))
        #expect(!alice.mayUse(queue: "team-b/etl") && !alice.mayUse(queue: "team-a"))
        let gpu = try #require(list.principal(key: Self.keyB))
        #expect(gpu.roles == [.worker] && gpu.mayClaim(tag: "gpu") && !gpu.mayClaim(tag: "secure"))
        #expect(gpu.pinTag == "key:gpu-1")
        #expect(list.principal(key: Self.keyHash)?.name == "hash-key")
    }

    @Test func mistakesAreRefusedWithTheLineAndWhatIsWrong() {
        func error(_ text: String) -> String {
            do { _ = try AllowList.parse(text, source: "allow.txt"); return "" } catch { return error.description }
        }
        #expect(error("\(Self.keyA) alice") .contains("allow.txt line 1: expected 'PUBLIC-KEY NAME ROLES"))
        #expect(error("# c\nnot-a-key alice view").contains("line 2: 'not-a-key' is not a public key"))
        #expect(error("\(Self.keyA) alice root").contains("unknown role 'root'"))
        #expect(error("\(Self.keyA) alice submit").contains("role 'submit' needs the queues it may use"))
        #expect(error("\(Self.keyA) a view\n\(Self.keyA) b view").contains("line 2: key rq:rM>}U… is listed twice"))
        #expect(error("\(Self.keyA) a view tag:gpu").contains("'tag:' scopes apply to the 'worker' role"))
    }

    @Test func globsMatchWholeNames() {
        #expect(Glob("team-a/*").matches("team-a/x/y"))
        #expect(!Glob("team-a/*").matches("team-ab"))
        #expect(Glob("*").matches(""))
        #expect(Glob("a?c").matches("abc") && !Glob("a?c").matches("ac"))
        #expect(Glob("*-gpu").matches("w-1-gpu") && !Glob("*-gpu").matches("w-1-gpu2"))
    }
}

struct RequestAccessTests {
    func principal(_ roles: Set<AccessRole>, queues: [String] = [], tags: [String] = []) -> Principal {
        Principal(name: "p", key: AllowListTests.keyA, roles: roles, queues: queues.map(Glob.init), tags: tags.map(Glob.init))
    }

    /// The queue of each existing op, as the core would answer.
    let queues = ["a1": "team-a/etl", "b1": "team-b/etl"]
    func denial(_ m: Message, _ p: Principal) -> String? {
        RequestAccess.denial(m, by: p, queueOf: { id, _ in queues[id] },
                             queuesOfRun: { $0 == "run-b" ? ["team-b/etl"] : ["team-a/etl"] })
    }

    func submit(_ queue: String) -> Message {
        var o = WireOperation()
        o.id = "x"
        o.kind = "shell"
        o.queue = queue
        var s = WireSubmit()
        s.operations = [o]
        return .submit(s)
    }

    func cancel(ids: [String] = [], run: String = "", queue: String = "") -> Message {
        var c = WireCancelOps()
        c.opIds = ids
        c.run = run
        c.queue = queue
        return .cancelOps(c)
    }

    @Test func aWorkerKeyOnlyWorks() {
        let w = principal([.worker], tags: ["gpu"])
        var h = WireHello()
        h.tags = ["gpu"]
        #expect(denial(.hello(h), w) == nil)
        #expect(denial(.finished(WireFinished()), w) == nil)
        #expect(denial(submit("default"), w)?.contains("may not submit") == true)
        #expect(denial(.status(WireStatus()), w)?.contains("may not read") == true)
        #expect(denial(.logs(WireLogs()), w)?.contains("may not read") == true)
        #expect(denial(.story(WireStory()), w)?.contains("may not read") == true)
        h.tags = ["gpu", "secure"]
        #expect(denial(.hello(h), w)?.contains("may not register with tag 'secure'") == true)
        h.tags = ["key:admin"]
        #expect(denial(.hello(h), principal([.worker]))?.contains("reserved") == true)
    }

    /// High availability (issue 29): stepping down and promoting are an admin's; following the journal is
    /// another coordinator's (`coordinator`, which `admin` does not imply); HA status is a read.
    @Test func leadershipAndStandbyRequestsNeedTheirRoles() {
        let submitter = principal([.submit]), admin = principal([.admin]), coordinator = principal([.coordinator])
        let stepDown = Message.ha(WireHighAvailability.with { $0.stepDown = true })
        #expect(denial(stepDown, submitter)?.contains("needs the 'admin' role") == true)
        #expect(denial(stepDown, admin) == nil)
        #expect(denial(.ha(WireHighAvailability()), submitter) == nil)
        #expect(denial(.promote, submitter)?.contains("needs the 'admin' role") == true)
        #expect(denial(.promote, coordinator)?.contains("needs the 'admin' role") == true)
        #expect(denial(.promote, admin) == nil)
        #expect(denial(.follow(WireFollow()), admin)?.contains("lacks the 'coordinator' role") == true)
        #expect(denial(.replicaAck(WireReplicaAck()), submitter)?.contains("lacks the 'coordinator' role") == true)
        #expect(denial(.follow(WireFollow()), coordinator) == nil)
    }

    @Test func aViewKeyReadsButChangesNothing() {
        let v = principal([.view])
        #expect(denial(.status(WireStatus()), v) == nil)
        #expect(denial(.watch(WireWatch()), v) == nil)
        #expect(denial(.wait(WireWait()), v) == nil)
        #expect(denial(.logs(WireLogs()), v) == nil, "LOGS is a read (1.5)")
        #expect(denial(.story(WireStory()), v) == nil, "STORY is a read (1.5)")
        #expect(denial(cancel(ids: ["a1"]), v)?.contains("may not cancel") == true)
        #expect(denial(submit("default"), v) != nil)
        var h = WireHello()
        h.name = "w"
        #expect(denial(.hello(h), v)?.contains("may not register workers") == true)
        #expect(denial(.credit(WireCredit()), v) != nil)
    }

    @Test func aSubmitterStaysInsideItsQueues() {
        let a = principal([.submit], queues: ["team-a/*"])
        #expect(denial(submit("team-a/etl"), a) == nil)
        #expect(denial(submit("team-b/etl"), a)?.contains("queue 'team-b/etl', outside the scope of key 'p'") == true)
        #expect(denial(submit(""), a)?.contains("queue 'default'") == true)   // no queue = "default"
        #expect(denial(cancel(ids: ["a1"]), a) == nil)
        #expect(denial(cancel(ids: ["a1", "b1"]), a)?.contains("operation 'b1' is in queue 'team-b/etl'") == true)
        #expect(denial(cancel(ids: ["unknown"]), a) == nil)   // the core says "not found", as to anyone
        #expect(denial(cancel(run: "run-b"), a)?.contains("run 'run-b' has operations in queue 'team-b/etl'") == true)
        #expect(denial(cancel(run: "run-a"), a) == nil)
        #expect(denial(cancel(queue: "team-b/etl"), a) != nil)
        #expect(denial(cancel(), a)?.contains("needs the 'admin' role") == true)
        var p = WireSetPriority()
        p.opIds = ["b1"]
        #expect(denial(.setPriority(p), a) != nil)
        var q = WireQueueControl()
        q.settings.name = "team-a/etl"
        #expect(denial(.queue(q), a)?.contains("needs the 'admin' role") == true)
        #expect(denial(.status(WireStatus()), a) == nil)
    }

    /// Finding 4 of issue 23: a SUBMIT may declare a queue's settings when it creates the queue; for an
    /// existing queue a changed setting needs admin (named in the refusal), an unchanged one is no change.
    @Test func settingsOfAnExistingQueueAreAdmins() {
        let existing = QueueCounts(name: "team-a/q", pending: 0, ready: 0, dispatched: 0, executing: 0, succeeded: 0, failed: 0,
                                   cancelled: 0, maxConcurrent: 3, suspended: false, qos: .default)
        func denial(_ settings: WireQueueSettings, _ p: Principal) -> String? {
            var s = WireSubmit()
            s.queues = [settings]
            var o = WireOperation()
            o.id = "x"
            o.kind = "noop"
            o.queue = settings.name
            s.operations = [o]
            return RequestAccess.denial(.submit(s), by: p, queueOf: { _, _ in nil }, queuesOfRun: { _ in nil },
                                        existingQueue: { $0 == "team-a/q" ? existing : nil })
        }
        let a = principal([.submit], queues: ["team-a/*"])
        let limit7 = queueSettings("team-a/q", maxConcurrent: 7, suspended: true)
        let why = denial(limit7, a)
        #expect(why?.contains("queue 'team-a/q' exists with maxConcurrent 3; this submission sets it to 7") == true, "\(why ?? "allowed")")
        #expect(why?.contains("needs the 'admin' role") == true)
        #expect(denial(queueSettings("team-a/q", suspended: true), a)?.contains("suspended false") == true)
        #expect(denial(queueSettings("team-a/q", maxConcurrent: 3, suspended: false), a) == nil, "the same settings again")
        #expect(denial(queueSettings("team-a/new", maxConcurrent: 7, suspended: true), a) == nil, "a queue it creates")
        #expect(denial(limit7, principal([.admin])) == nil)
    }

    func queueSettings(_ name: String, maxConcurrent: Int32? = nil, suspended: Bool? = nil) -> WireQueueSettings {
        var q = WireQueueSettings()
        q.name = name
        if let maxConcurrent { q.maxConcurrent = maxConcurrent }
        if let suspended { q.suspended = suspended }
        return q
    }

    @Test func anAdminMayDoEverything() {
        let admin = principal([.admin])
        var q = WireQueueControl()
        q.settings.name = "team-b/etl"
        let all: [Message] = [submit("team-b/etl"), cancel(), cancel(ids: ["b1"]), .queue(q), .status(WireStatus()), .hello(WireHello())]
        for m in all {
            #expect(denial(m, admin) == nil, "\(m.command)")
        }
    }
}

/// Issue 23 (8): an allow file others may write grants nothing: refused at start, and a reload keeps the
/// previous list (and logs why) until its mode is fixed.
struct AllowFilePermissionTests {
    @Test func aWritableByOthersAllowFileIsRefusedAtStartAndOnReload() throws {
        guard libzmqHas("curve") else { return }
        let dir = NSTemporaryDirectory() + "opq-allow-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/allow.txt"
        try "\(AllowListTests.keyA) alice view\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o666)
        let keys = try CurveKeyPair.generate()
        let logger = Logger(label: "test")
        #expect {
            _ = try AccessControl(keys: keys, allowPath: path, logger: logger)
        } throws: { e in
            "\(e)".contains("allow file '\(path)'") && "\(e)".contains("chmod go-w '\(path)'")
        }
        chmod(path, 0o644)
        let access = try AccessControl(keys: keys, allowPath: path, logger: logger)
        #expect(access.current().list.count == 1)

        // Someone else adds an admin key to a file they could write: not taken.
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.seekToEnd()
        try h.write(contentsOf: Data("\(AllowListTests.keyB) mallory admin\n".utf8))
        try h.close()
        chmod(path, 0o646)
        access.reload()
        #expect(access.current().list.count == 1 && access.current().list.principal(key: AllowListTests.keyB) == nil)
        #expect(access.reloadIfChanged() == false, "the refused version is not retried every poll")
        // Fixing the mode is a change the poll sees: no SIGHUP needed.
        chmod(path, 0o644)
        #expect(access.reloadIfChanged())
        #expect(access.current().list.principal(key: AllowListTests.keyB)?.name == "mallory")
    }
}
