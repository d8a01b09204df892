import Testing
@testable import SchedulerCore

/// The dispatch token (PROTOCOL.md 1.10): a DISPATCH carries the op's row, the worker echoes it, and the
/// report finds its op without an id lookup — but only when the row still holds that op.
struct DispatchTokenTests {
    @Test func aDispatchCarriesItsOpsRowAndAReportWithItFinishesThatOp() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c")])
        let sent = h.join(1, slots: 3)
        #expect(sent.map(\.op) == ["a", "b", "c"])
        for d in sent { #expect(d.token == UInt64(h.s.lookup(d.op)!), "\(d.op)") }
        let fenced = h.s.fencing.total
        for d in sent {
            h.send(.partStarted(PartRef(worker: 1, op: d.op, part: 0, attempt: d.attempt, token: d.token)))
            h.send(.partFinished(PartRef(worker: 1, op: d.op, part: 0, attempt: d.attempt, token: d.token), .succeeded([1]), grant: 0))
        }
        #expect(h.s.fencing.total == fenced)
        for id in ["a", "b", "c"] { #expect(h.state(id) == .finished, "\(id)") }
    }

    @Test func aTokenThatNamesAnotherOpOrNoRowIsNotTrusted() {
        var h = Harness()
        h.submit([op("a"), op("b")])
        let sent = h.join(1, slots: 2)
        let (a, b) = (sent[0], sent[1])
        // a's report carrying b's row (a token from before a restart, say): matched by a's id.
        h.send(.partFinished(PartRef(worker: 1, op: "a", part: 0, attempt: a.attempt, token: b.token), .succeeded([]), grant: 0))
        #expect(h.state("a") == .finished && h.state("b") == .dispatched, "b untouched")
        h.send(.partFinished(PartRef(worker: 1, op: "b", part: 0, attempt: b.attempt, token: 1 << 40), .succeeded([]), grant: 0))
        #expect(h.state("b") == .finished, "a row past the table: looked up by id")
        #expect(h.s.fencing.total == 0)
    }
}
