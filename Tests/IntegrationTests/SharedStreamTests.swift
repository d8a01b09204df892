import ClusterTestSupport
import OpClient
import Testing
import WireProtocol

/// Watchers with the same filters share one event stream (PROTOCOL.md 1.7, §5.22): a later watcher's
/// events are numbered on from the stream, it gets nothing from before its WATCH, and both watchers get
/// the same events with the same numbers, without gaps.
struct SharedStreamTests {
    @Test func aLaterWatcherJoinsTheStreamAndGetsOnlyWhatFollows() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w", slots: 2)
        let first = try c.connect()
        try first.watch()
        #expect(try c.submit([op("a")], run: "r1").accepted)
        try c.wait(["r1/a"])
        let second = try c.connect()
        try second.watch()
        #expect(try c.submit([op("b")], run: "r2").accepted)
        try c.wait(["r2/b"])

        func events(of conn: CoordinatorConnection) throws -> [WireEvent] {
            var got: [WireEvent] = []
            try waitUntil("the FINISHED event of r2/b", timeout: 20, interval: .milliseconds(10)) {
                got += try conn.nextEvents(timeout: .milliseconds(50))
                return got.contains { $0.run == "r2" && $0.opID == "b" && $0.state == .finished }
            }
            return got
        }
        let all = try events(of: first), later = try events(of: second)
        #expect(all.first?.sequence == 1, "a new stream counts from 1")
        #expect(all.map(\.sequence) == Array(1...UInt64(all.count)), "no gap: \(all.map(\.sequence))")
        #expect(!later.contains { $0.run == "r1" }, "nothing from before its WATCH")
        #expect(all.contains { $0.run == "r1" && $0.opID == "a" && $0.state == .finished })
        let firstOfLater = try #require(later.first)
        #expect(firstOfLater.sequence > 1, "numbered on from the shared stream")
        let tail = all.drop { $0.sequence != firstOfLater.sequence }
        #expect(later.map { "\($0.sequence) \($0.run)/\($0.opID) \($0.state)" } == tail.map { "\($0.sequence) \($0.run)/\($0.opID) \($0.state)" },
                "the same events with the same numbers")
    }
}
