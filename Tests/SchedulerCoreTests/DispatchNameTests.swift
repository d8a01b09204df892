import Testing
@testable import SchedulerCore

/// A dispatch carries the op's display name only when one was given (a handler's `context.name`);
/// an op without one sends no name, and the worker shows its id.
@Suite struct DispatchNameTests {
    @Test func testDispatchCarriesTheGivenNameOnly() {
        var h = Harness()
        var named = op("named"); named.name = "Resize the photo"
        var same = op("same"); same.name = "same"
        h.submit([named, same, op("plain")])
        let names = Dictionary(uniqueKeysWithValues: h.join(1, slots: 3).map { ($0.op, $0.name) })
        #expect(names == ["named": "Resize the photo", "same": nil, "plain": nil])
    }

    @Test func testRetriedDispatchKeepsTheName() {
        var h = Harness()
        var flaky = op("flaky"); flaky.name = "flaky one"; flaky.retries = 1; flaky.retryDelayMicros = 0
        h.submit([flaky])
        let first = h.join(1)
        #expect(first.map(\.name) == ["flaky one"])
        var again = dispatches(h.finish(first[0], .failed("boom")))   // a zero delay retries at once
        h.now += 1_000_000
        again += dispatches(h.send(.tick))
        #expect(again.map(\.name) == ["flaky one"] && again.map(\.attempt) == [2])
    }
}
