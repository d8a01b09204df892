import Foundation
import Testing
import WireProtocol
@testable import WorkerAgent
import WorkerRuntime

extension HeldParts {
    /// Parts dispatched without a token (as by a 1.9 coordinator).
    mutating func dispatched(_ keys: [PartKey]) { dispatched(keys.map { (key: $0, token: UInt64(0)) }) }
    /// Its handler started. True: a STARTED goes out now.
    mutating func startedSends(_ key: PartKey, at: Int64) -> Bool { started(key, at: at) != nil }
}

/// What a worker holds across sessions (PROTOCOL.md §7.4), as a pure state machine: no sockets, no
/// clocks. Times are µs on the worker's monotonic clock.
struct HeldPartsTests {
    static let second: Int64 = 1_000_000

    func key(_ id: String, part: Int = 0, attempt: Int = 1) -> PartKey { PartKey(opID: id, part: part, attempt: attempt) }

    func record(_ key: PartKey, _ outcome: OperationOutcome = .succeeded(Array("ok".utf8)), at: Int64) -> WireFinishedRecord {
        WireFinishedRecord(key: key, outcome: outcome, at: at)
    }

    /// Finishes `key` at `at` and, if a session is registered, reports it at once (as the session does).
    @discardableResult
    func finish(_ held: inout HeldParts, _ key: PartKey, _ outcome: OperationOutcome = .succeeded(Array("ok".utf8)),
                at: Int64) -> HeldParts.Disposition {
        var r = record(key, outcome, at: at)
        let d = held.finished(key, record: &r, at: at)
        if case .report = d { held.reportedFinished([key], at: at) }
        return d
    }

    func ids(_ refs: [WirePartRef]) -> [String] { refs.map(\.opID) }
    func ids(_ records: [WireFinishedRecord]) -> [String] { records.map(\.opID) }

    func hello(_ running: [WirePartRef], _ finished: [WireFinishedRecord]) -> WireHello {
        var h = WireHello()
        h.protocolVersion = UInt32(WireVersion.current)
        h.name = "w"
        h.slots = 2
        h.kinds = ["sleep"]
        h.running = running
        h.finished = finished
        return h
    }

    @Test func aFirstRegistrationListsNothingAndGrantsSlotsPlusPrefetch() throws {
        var held = HeldParts(capacity: 4)
        let (running, finished) = held.helloSnapshot()
        #expect(running.isEmpty && finished.isEmpty)
        // A HELLO with both lists empty (every first registration, every worker older than 1.3) is valid.
        let frames = WireCodec.encode(.hello(hello(running, finished)))
        guard case .success(let env) = WireCodec.decode(frames), case .hello(let h) = env.message else {
            Issue.record("a HELLO with empty lists does not decode: \(WireCodec.decode(frames))")
            return
        }
        #expect(h.running.isEmpty && h.finished.isEmpty)
        let w = held.welcomed(at: 10, livenessBound: 3 * Self.second)
        #expect(w == HeldParts.Welcomed(credit: 4, finished: [], started: []))
        #expect(held.registered)
    }

    @Test func partsHeldWhenTheCoordinatorIsLostAreListedAsRunningOrWaiting() throws {
        var held = HeldParts(capacity: 4)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 1, livenessBound: 3 * Self.second)
        held.dispatched([key("a"), key("b"), key("c")])
        let sendsB = held.startedSends(key("b"), at: 100)
        #expect(sendsB, "registered: STARTED goes out")
        let sendsA = held.startedSends(key("a"), at: 200)
        #expect(sendsA)
        held.sessionEnded(at: 1_000)
        #expect(held.count == 3, "a lost session keeps its parts")

        let (running, finished) = held.helloSnapshot()
        #expect(ids(running) == ["b", "a", "c"], "started ones by start time, then waiting ones in dispatch order")
        #expect(running.map(\.atUs) == [100, 200, 0])
        #expect(finished.isEmpty)
        let frames = WireCodec.encode(.hello(hello(running, finished)))
        guard case .success = WireCodec.decode(frames) else { Issue.record("HELLO with running parts does not decode"); return }

        // The next WELCOME: credit for what is free, nothing to resend (STARTED went out before).
        let w = held.welcomed(at: 2_000, livenessBound: 3 * Self.second)
        #expect(w == HeldParts.Welcomed(credit: 1, finished: [], started: []))
        // The held parts belong to the new session: their FINISHED goes out with credit.
        let afterWelcome = finish(&held, key("b"), at: 3_000)
        #expect(afterWelcome == .report(credit: 1))
    }

    @Test func aPartThatStartsAndFinishesWhileAwayIsListedAsFinishedWithItsStart() throws {
        var held = HeldParts(capacity: 2)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 1, livenessBound: Self.second)
        held.dispatched([key("a"), key("b")])
        held.sessionEnded(at: 10)
        let sendsA = held.startedSends(key("a"), at: 20)
        #expect(!sendsA, "no session: nothing is sent")
        let finishedA = finish(&held, key("a"), .failed("boom"), at: 30)
        #expect(finishedA == .buffered)
        let sendsB = held.startedSends(key("b"), at: 40)
        #expect(!sendsB)

        let (running, finished) = held.helloSnapshot()
        #expect(ids(running) == ["b"])
        #expect(running[0].atUs == 40)
        #expect(ids(finished) == ["a"])
        #expect(finished[0].failed == "boom")
        #expect(finished[0].atUs == 30 && finished[0].startedAtUs == 20)

        // The HELLO carried both: nothing goes out again after WELCOME, and b's slot is not granted.
        let w = held.welcomed(at: 50, livenessBound: Self.second)
        #expect(w == HeldParts.Welcomed(credit: 1, finished: [], started: []))
    }

    @Test func eventsBetweenHelloAndWelcomeGoOutRightAfterWelcome() throws {
        var held = HeldParts(capacity: 3)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 1, livenessBound: Self.second)
        held.dispatched([key("a"), key("b"), key("c")])
        held.sessionEnded(at: 10)
        let (running, _) = held.helloSnapshot()
        #expect(running.map(\.atUs) == [0, 0, 0])
        // After the HELLO went out, before WELCOME: a starts, b finishes.
        let sendsA = held.startedSends(key("a"), at: 20)
        #expect(!sendsA)
        let finishedB = finish(&held, key("b"), at: 30)
        #expect(finishedB == .buffered)
        let w = held.welcomed(at: 40, livenessBound: Self.second)
        #expect(w.credit == 1, "3 − the 2 still held")
        #expect(ids(w.finished) == ["b"], "finished after the HELLO: sent as FINISHED")
        #expect(ids(w.started) == ["a"] && w.started[0].atUs == 20, "started after the HELLO: sent as STARTED")
        // c starts now: reported as usual.
        let sendsC = held.startedSends(key("c"), at: 50)
        #expect(sendsC)
    }

    @Test func finishedSentShortlyBeforeTheLossIsListedAgainWithinTheWindow() throws {
        var held = HeldParts(capacity: 8)
        _ = held.helloSnapshot()
        // Liveness bound 5 s: the window is 3 × 5 s = 15 s (more than the 10 s minimum).
        _ = held.welcomed(at: 0, livenessBound: 5 * Self.second)
        held.dispatched(["old", "edge", "new"].map { key($0) })
        let oldDone = finish(&held, key("old"), at: 1 * Self.second)
        #expect(oldDone == .report(credit: 1))
        let edgeDone = finish(&held, key("edge"), at: 6 * Self.second)
        #expect(edgeDone == .report(credit: 1))
        let newDone = finish(&held, key("new"), at: 20 * Self.second)
        #expect(newDone == .report(credit: 1))
        held.sessionEnded(at: 21 * Self.second)
        let (_, finished) = held.helloSnapshot()
        #expect(ids(finished) == ["edge", "new"], "FINISHED sent within 15 s before the loss")

        // A registration that never got WELCOME does not move the window: the next HELLO lists the same.
        held.sessionEnded(at: 60 * Self.second)
        let again = held.helloSnapshot()
        #expect(ids(again.finished) == ["edge", "new"])

        // With the default numbers (3 × 1 s), the 10 s minimum holds.
        var short = HeldParts(capacity: 8)
        _ = short.helloSnapshot()
        _ = short.welcomed(at: 0, livenessBound: 3 * Self.second)
        short.dispatched([key("x"), key("y")])
        finish(&short, key("x"), at: 1 * Self.second)
        finish(&short, key("y"), at: 5 * Self.second)
        short.sessionEnded(at: 14 * Self.second)
        let shortHello = short.helloSnapshot()
        #expect(ids(shortHello.finished) == ["y"])
    }

    @Test func whatDoesNotFitTheHelloGoesOutAsFinishedAfterWelcome() throws {
        var limits = HeldParts.Limits()
        limits.maxRecords = 3
        var held = HeldParts(capacity: 10, limits: limits)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        held.dispatched((0..<6).map { key("p\($0)") })
        finish(&held, key("p0"), at: 100)                  // reported before the loss
        held.sessionEnded(at: 200)
        for i in 1..<6 { let d = finish(&held, key("p\(i)"), at: 200 + Int64(i)); #expect(d == .buffered) }
        #expect(held.finishedKept == 6, "never-reported records are not dropped")

        let (running, finished) = held.helloSnapshot()
        #expect(running.isEmpty)
        #expect(ids(finished) == ["p3", "p4", "p5"], "the newest 3, oldest first")
        let w = held.welcomed(at: 300, livenessBound: Self.second)
        #expect(ids(w.finished) == ["p0", "p1", "p2"], "the rest, as FINISHED, oldest first")
        #expect(w.credit == 10)
        // From now on they count as reported at WELCOME, kept within the limits (the newest 3).
        held.sessionEnded(at: 400)
        let later = held.helloSnapshot()
        #expect(ids(later.finished) == ["p3", "p4", "p5"])
    }

    @Test func finishedRecordsAreBoundedByBytesToo() throws {
        var limits = HeldParts.Limits()
        limits.maxBytes = 3_000
        var held = HeldParts(capacity: 10, limits: limits)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        held.dispatched((0..<5).map { key("r\($0)") })
        let kilobyte = OperationOutcome.succeeded([UInt8](repeating: 7, count: 1_000))
        for i in 0..<5 { finish(&held, key("r\(i)"), kilobyte, at: 10 + Int64(i)) }
        // The recent list itself stays within the bytes while the session runs.
        #expect(held.finishedKept == 2)
        held.sessionEnded(at: 20)
        let (_, finished) = held.helloSnapshot()
        #expect(ids(finished) == ["r3", "r4"])
        #expect(finished.reduce(0) { $0 + $1.wireSizeBound } <= 3_000)
    }

    @Test func aLargeRunningListLeavesLessRoomForFinishedRecords() throws {
        var limits = HeldParts.Limits()
        limits.helloBudget = 2_000
        var held = HeldParts(capacity: 100, limits: limits)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        let long = String(repeating: "x", count: 500)
        held.dispatched([key("\(long)1"), key("\(long)2"), key("done")])
        held.sessionEnded(at: 10)
        finish(&held, key("done"), .succeeded([UInt8](repeating: 1, count: 1_500)), at: 11)
        let (running, finished) = held.helloSnapshot()
        #expect(running.count == 2)
        #expect(finished.isEmpty, "over the HELLO budget with the running list")
        let welcome = held.welcomed(at: 20, livenessBound: Self.second)
        #expect(ids(welcome.finished) == ["done"])
    }

    @Test func aPartTheCoordinatorCancelledIsNotOfferedAgain() throws {
        var held = HeldParts(capacity: 4)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        held.dispatched([key("multi", part: 0), key("multi", part: 1), key("multi", part: 0, attempt: 2), key("other")])
        held.cancelledByCoordinator(opID: "multi", attempt: 1)
        held.sessionEnded(at: 10)
        let (running, _) = held.helloSnapshot()
        #expect(running.map { "\($0.opID)#\($0.part)@\($0.attempt)" } == ["multi#0@2", "other#0@1"])
        // It still finishes (cancelled) and is reported like any other.
        let cancelledDone = finish(&held, key("multi", part: 1), .cancelled("refused"), at: 20)
        #expect(cancelledDone == .buffered)
        let hello = held.helloSnapshot()
        #expect(ids(hello.finished) == ["multi"])
        let welcome = held.welcomed(at: 30, livenessBound: Self.second)
        #expect(welcome.credit == 1, "4 − 3 still held")
    }

    @Test func creditNeverExceedsWhatTheWorkerCanTake() throws {
        var held = HeldParts(capacity: 2)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        // The coordinator sent more than the credit (a coordinator bug; the worker queues them anyway).
        held.dispatched((0..<4).map { key("o\($0)") })
        held.sessionEnded(at: 10)
        _ = held.helloSnapshot()
        let welcome = held.welcomed(at: 20, livenessBound: Self.second)
        #expect(welcome.credit == 0)
        // Two finishes pay back the excess; only then does a finish give credit.
        let d0 = finish(&held, key("o0"), at: 30)
        #expect(d0 == .report(credit: 0))
        let d1 = finish(&held, key("o1"), at: 31)
        #expect(d1 == .report(credit: 0))
        let d2 = finish(&held, key("o2"), at: 32)
        #expect(d2 == .report(credit: 1))
        let d3 = finish(&held, key("o3"), at: 33)
        #expect(d3 == .report(credit: 1))
        #expect(held.isEmpty)
    }

    @Test func duplicatesAndUnknownPartsAreIgnored() throws {
        var held = HeldParts(capacity: 2)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        held.dispatched([key("a")])
        held.dispatched([key("a")])
        #expect(held.count == 1)
        let sendsUnknown = held.startedSends(key("zzz"), at: 5)
        #expect(!sendsUnknown)
        let unknownDone = finish(&held, key("zzz"), at: 6)
        #expect(unknownDone == .ignored)
        let firstDone = finish(&held, key("a"), at: 7)
        #expect(firstDone == .report(credit: 1))
        let secondDone = finish(&held, key("a"), at: 8)
        #expect(secondDone == .ignored, "finished once")
        #expect(held.finishedKept == 1)
    }

    @Test func leavingDropsEverythingAndNamesThePartsToCancel() throws {
        var held = HeldParts(capacity: 4)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        held.dispatched([key("c"), key("a"), key("b")])
        finish(&held, key("a"), at: 10)
        let dropped = held.dropAll()
        #expect(dropped == [key("c"), key("b")], "in dispatch order")
        #expect(held.isEmpty && held.finishedKept == 0 && !held.registered)
        let (running, finished) = held.helloSnapshot()
        #expect(running.isEmpty && finished.isEmpty)
    }

    @Test func aFinishedRecordIsKeptBoundedOverALongSession() throws {
        var held = HeldParts(capacity: 64)
        _ = held.helloSnapshot()
        _ = held.welcomed(at: 0, livenessBound: Self.second)
        // 100,000 parts over 100 s: the recent list holds the last 10 s, at most 4,096 records.
        for i in 0..<100_000 {
            let k = key("n\(i)")
            held.dispatched([k])
            finish(&held, k, .succeeded([]), at: Int64(i) * 1_000)
        }
        #expect(held.finishedKept == 4_096)
        held.sessionEnded(at: 100 * Self.second)
        let (_, finished) = held.helloSnapshot()
        #expect(finished.count == 4_096)
        #expect(finished.last?.opID == "n99999")
    }
}
