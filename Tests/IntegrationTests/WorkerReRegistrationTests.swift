import ClusterTestSupport
import Foundation
import Testing
import WireProtocol
import ZeroMQ

/// A real `opworker` keeps running its parts when its coordinator goes away, and tells the next one
/// what it holds (PROTOCOL.md §7.4). A stand-in coordinator (a ROUTER driven by the test) plays both
/// coordinators, so the test sees every message the worker sends.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct WorkerReRegistrationTests {
    /// The stand-ins' WELCOME: the worker declares a coordinator lost after 3 × 100 ms of silence.
    static let heartbeatMs: UInt32 = 100
    static let liveness: UInt32 = 3

    /// The coordinator goes silent, then a new one comes up on the same port: the worker's HELLO lists
    /// the `sleep` still running (with its start time) and the `shell` op that finished meanwhile (with
    /// its outcome), and the shell op ran exactly once — it was not killed when the coordinator went.
    @Test func aWorkerListsWhatItHoldsWhenItRegistersWithANewCoordinator() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let marker = dir.appendingPathComponent("marker").path
        let ctx = try Context()
        let first = try StandIn(ctx)
        let endpoint = first.endpoint
        try Self.withWorker(["--connect", endpoint, "--name", "held", "--slots", "2", "--prefetch", "0"]) {
            let hello = try first.register()
            #expect(hello.running.isEmpty && hello.finished.isEmpty, "a first registration holds nothing")
            #expect(try first.expectCredit() == 2)
            first.dispatch([Self.record("nap", kind: "sleep", payload: "60000"),
                            Self.record("mark", kind: "shell", payload: Self.shell("sleep 1; echo once >> '\(marker)'; printf done"))])
            let started = try first.collectStarted(["nap", "mark"])
            let stamped = started.values.allSatisfy { $0 > 0 }
            #expect(stamped, "\(started)")

            // Silent from now on: the worker loses it after 300 ms and tries again (its HELLOs reach this
            // socket, which reads nothing), while the shell op finishes.
            try waitUntil("the shell op wrote its marker", timeout: 20) { FileManager.default.fileExists(atPath: marker) }
            first.close()

            let second = try StandIn(ctx, endpoint: endpoint)
            defer { second.close() }
            // A registration that began before the shell op finished lists it as running; the stand-in
            // does not answer it (no WELCOME), and the worker registers again with a fresh list.
            var later = WireHello()
            try second.serve(until: "a HELLO listing the finished shell op", timeout: 20, keepAlive: false) { message in
                guard case .hello(let h) = message else { return false }
                let napRunning = h.running.contains { $0.opID == "nap" && $0.attempt == 1 && $0.atUs > 0 }
                #expect(napRunning, "every HELLO lists the sleep as running: \(h.running)")
                later = h
                return h.finished.contains { $0.opID == "mark" }
            }
            #expect(later.running.map(\.opID) == ["nap"], "\(later.running)")
            #expect(later.running.first?.atUs == started["nap"], "its start time, on the worker's clock")
            #expect(later.finished.count == 1, "\(later.finished)")
            let mark = try #require(later.finished.first)
            #expect(mark.attempt == 1 && mark.part == 0)
            #expect(mark.succeeded == Data("done".utf8), "succeeded: \(String(describing: mark.outcome))")
            #expect(mark.atUs > 0 && mark.startedAtUs == started["mark"], "\(mark)")
            #expect(try String(contentsOfFile: marker, encoding: .utf8) == "once\n", "the shell op ran exactly once")

            // WELCOME: credit only for the free slot; the held sleep belongs to the new session, and a
            // CANCEL for it cancels it (FINISHED cancelled, with its credit).
            second.welcome()
            #expect(try second.expectCredit() == 1)
            var cancel = WireCancelRecord()
            cancel.opID = "nap"
            cancel.attempt = 1
            cancel.reason = "refused"
            var c = WireCancel()
            c.records = [cancel]
            second.send(.cancel(c))
            var napFinished: WireFinished?
            try second.serve(until: "FINISHED for the cancelled sleep", timeout: 10, keepAlive: true) { message in
                guard case .finished(let f) = message else { return false }
                let hasMark = f.records.contains { $0.opID == "mark" }
                #expect(!hasMark, "already reported in the HELLO")
                guard f.records.contains(where: { $0.opID == "nap" }) else { return false }
                napFinished = f
                return true
            }
            let nap = napFinished?.records.first { $0.opID == "nap" }
            #expect(nap?.cancelled == "refused", "\(String(describing: napFinished))")
            #expect(napFinished?.credit == 1)
        }
    }

    /// DISCONNECT from the coordinator ends the session, not the work: the running shell op goes on,
    /// the next HELLO lists it, and its FINISHED goes to the new session.
    @Test func aDisconnectDoesNotKillTheRunningShellOp() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let marker = dir.appendingPathComponent("marker").path
        let ctx = try Context()
        let standIn = try StandIn(ctx)
        defer { standIn.close() }
        try Self.withWorker(["--connect", standIn.endpoint, "--name", "kept", "--slots", "1", "--prefetch", "0"]) {
            _ = try standIn.register()
            #expect(try standIn.expectCredit() == 1)
            standIn.dispatch([Self.record("sh", kind: "shell", payload: Self.shell("sleep 1; echo once >> '\(marker)'; printf done"))])
            let started = try standIn.collectStarted(["sh"])
            let oldPeer = standIn.peer

            var d = WireDisconnect()
            d.reason = "go away"
            standIn.send(.disconnect(d))
            let hello = try standIn.register()
            #expect(standIn.peer != oldPeer, "a new connection")
            #expect(hello.running.map(\.opID) == ["sh"] && hello.running.first?.atUs == started["sh"], "\(hello.running)")
            #expect(hello.finished.isEmpty, "\(hello.finished)")
            #expect(try standIn.expectCredit() == nil, "its only slot is taken: no credit yet")

            var finished: WireFinished?
            try standIn.serve(until: "FINISHED for the shell op", timeout: 20, keepAlive: true) { message in
                if case .finished(let f) = message { finished = f }
                return finished != nil
            }
            #expect(finished?.records.map(\.opID) == ["sh"])
            #expect(finished?.records.first?.succeeded == Data("done".utf8), "\(String(describing: finished))")
            #expect(finished?.credit == 1)
            #expect(try String(contentsOfFile: marker, encoding: .utf8) == "once\n")
        }
    }

    // MARK: helpers

    /// Runs `body` while an `opworker` with `args` runs; stops it after (SIGTERM), and shows its log
    /// if `body` throws.
    static func withWorker(_ args: [String], _ body: () throws -> Void) throws {
        let worker = try Spawned(Binaries.path("opworker"), args, env: [:])
        do {
            try body()
        } catch {
            Issue.record("opworker's log:\n\(worker.finish(timeout: 0).stderr)")
            throw error
        }
        _ = worker.finish(timeout: 0)
    }

    static func tempDir() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-rereg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func record(_ id: String, kind: String, payload: String) -> WireDispatchRecord {
        var r = WireDispatchRecord()
        r.opID = id
        r.attempt = 1
        r.kind = kind
        r.payload = Data(payload.utf8)
        return r
    }

    static func shell(_ command: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: ["command": command]), as: UTF8.self)
    }
}

/// A stand-in coordinator: one ROUTER, driven by the test's thread; every wait has a deadline.
final class StandIn {
    let router: Socket
    let endpoint: String
    private let poller = Poller()
    /// The routing id of the worker's latest connection.
    private(set) var peer: [UInt8]?
    private var lastSent = ContinuousClock.now
    /// Messages received but not yet asked for.
    private var inbox: [Message] = []

    /// `endpoint`: a port a closed stand-in had is bound again (its listener closes asynchronously).
    init(_ ctx: Context, endpoint: String = "tcp://127.0.0.1:*") throws {
        let router = try Socket(ctx, type: .router)
        self.router = router
        try router.set(.linger, 0)
        var lastError: (any Error)?
        try waitUntil("the stand-in to bind \(endpoint)", timeout: 10, logs: { lastError.map { "\($0)" } ?? "" }) {
            do {
                try router.bind(endpoint)
                return true
            } catch {
                lastError = error
                return false
            }
        }
        self.endpoint = try router.lastEndpoint()
        _ = poller.add(router)
    }

    func close() { router.close() }

    func send(_ message: Message) {
        guard let peer else { return }
        _ = try? router.sendMultipart([peer] + WireCodec.encode(message), flags: .dontWait)
        lastSent = ContinuousClock.now
    }

    /// Feeds each message from the worker (HEARTBEATs left out) to `done` until it says true. With
    /// `keepAlive` it heartbeats the worker meanwhile (a registered session needs one every 300 ms).
    /// In `done`, give `#expect` a value, not an expression with a trailing closure: with Swift Testing
    /// 6.3, `#expect(!f.records.contains { $0.opID == "x" })` there made `done` return false every time.
    func serve(until what: String, timeout: Double, keepAlive: Bool, _ done: (Message) throws -> Bool) throws {
        // The poll below paces it (20 ms at most per round).
        try waitUntil("\(what) at the stand-in coordinator", timeout: timeout, interval: .zero) {
            while !inbox.isEmpty {
                if try done(inbox.removeFirst()) { return true }
            }
            if keepAlive && ContinuousClock.now - lastSent >= .milliseconds(Int(WorkerReRegistrationTests.heartbeatMs)) {
                send(.heartbeat)
            }
            _ = try poller.poll(timeout: .milliseconds(20))
            while let frames = try router.receiveMultipart(flags: .dontWait) {
                guard frames.count >= 3, case .success(let envelope) = WireCodec.decode(Array(frames[1...])) else {
                    Issue.record("the worker sent a message that does not decode: \(WireCodec.decode(Array(frames.dropFirst())))")
                    continue
                }
                if case .heartbeat = envelope.message { continue }
                peer = frames[0]
                inbox.append(envelope.message)
            }
            return false
        }
    }

    /// Waits for a HELLO and answers WELCOME.
    func register() throws -> WireHello {
        var hello = WireHello()
        try serve(until: "HELLO", timeout: 20, keepAlive: false) { message in
            guard case .hello(let h) = message else { return false }
            hello = h
            return true
        }
        welcome()
        return hello
    }

    func welcome() {
        var w = WireWelcome()
        w.workerID = "w1"
        w.heartbeatIntervalMs = WorkerReRegistrationTests.heartbeatMs
        w.liveness = WorkerReRegistrationTests.liveness
        send(.welcome(w))
    }

    /// The credit the worker grants right after WELCOME; nil if its next message is something else, or
    /// nothing comes within 1 s (a worker with no free slot sends no CREDIT).
    func expectCredit() throws -> UInt32? {
        var credit: UInt32?
        do {
            try serve(until: "CREDIT", timeout: 1, keepAlive: true) { message in
                if case .credit(let c) = message { credit = c.credit } else { inbox.insert(message, at: 0) }
                return true
            }
        } catch is ClusterError {
            return nil
        }
        return credit
    }

    func dispatch(_ records: [WireDispatchRecord]) {
        var d = WireDispatch()
        d.records = records
        send(.dispatch(d))
    }

    /// Start times (`at_us`, the worker's clock) of these ops, from STARTED (or FINISHED's
    /// `started_at_us`), keeping the worker alive meanwhile.
    func collectStarted(_ ids: Set<String>) throws -> [String: Int64] {
        var started: [String: Int64] = [:]
        try serve(until: "STARTED for \(ids.sorted())", timeout: 20, keepAlive: true) { message in
            switch message {
            case .started(let s): for p in s.parts { started[p.opID] = p.atUs }
            case .finished(let f):
                Issue.record("finished before the coordinator went away: \(f.records.map(\.opID))")
                for r in f.records { started[r.opID] = r.startedAtUs }
            default: break
            }
            return ids.isSubset(of: started.keys)
        }
        return started
    }
}
