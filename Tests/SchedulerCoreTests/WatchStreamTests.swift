import Testing
@testable import SchedulerCore

/// Watchers with the same filters and form share one stream (PROTOCOL.md §5.22): the core names it in
/// the WATCH's reply and in every event it publishes, once per stream, not once per watcher.
struct WatchStreamTests {
    private func published(_ out: [Action]) -> [PublishedEvent] {
        out.compactMap { if case .publish(let p) = $0 { return p } else { return nil } }
    }

    private func stream(_ h: inout Harness, client: UInt64, queue: String? = nil, withResults: Bool = false,
                        progress: Bool = false) -> UInt64? {
        let ref = ClientRef(client: client, request: 1)
        guard case .watching(let s)? = reply(ref, h.send(.watch(ref, queue: queue, withResults: withResults, progress: progress)))
        else { return nil }
        return s
    }

    @Test func watchersWithTheSameFiltersAndFormShareAStream() throws {
        var h = Harness()
        h.submit([op("a")])
        let a = try #require(stream(&h, client: 1))
        #expect(stream(&h, client: 2) == a, "same filters, same form: one stream")
        let results = try #require(stream(&h, client: 3, withResults: true))
        let progress = try #require(stream(&h, client: 4, progress: true))
        let queue = try #require(stream(&h, client: 5, queue: "default"))
        #expect(Set([a, results, progress, queue]).count == 4, "another form or filter: another stream")

        let events = published(h.send(.workerJoined(WorkerHello(worker: 1, name: "w1", slots: 1, kinds: ["noop"]))))
        let dispatched = events.filter { $0.event.op == "a" }
        #expect(dispatched.count == 4, "one action per stream, not per watcher")
        #expect(dispatched.first { $0.stream == a }?.watchers == [1, 2])
        #expect(dispatched.first { $0.stream == results }?.withResult == true)
        #expect(dispatched.first { $0.stream == a }?.withResult == false)
    }

    @Test func progressGoesOnlyToStreamsThatAskedForIt() throws {
        var h = Harness()
        let plain = try #require(stream(&h, client: 1))
        let progress = try #require(stream(&h, client: 2, progress: true))
        let (_, _) = h.submit([op("a")])
        let d = h.join(1)
        h.start(d[0])
        let events = published(h.send(.progress(PartRef(worker: 1, op: "a", part: 0, attempt: 1), fraction: 0.5, message: "3 of 6 files")))
        #expect(events.map(\.stream) == [progress], "not to \(plain)")
        #expect(events.first?.event.transition == .progress(part: 0, fraction: 0.5, message: "3 of 6 files"),
                "the worker's words go with the fraction")
    }

    /// A stream whose watchers all left is gone; a new one gets a new name, so events still queued in the
    /// shell for the old one never reach a watcher of the new.
    @Test func aStreamIsNeverNamedAgain() throws {
        var h = Harness()
        let first = try #require(stream(&h, client: 1))
        h.send(.unwatch(client: 1))
        let second = try #require(stream(&h, client: 1))
        #expect(second != first)
        // A new WATCH replaces the old: the client leaves its stream.
        let third = try #require(stream(&h, client: 1, withResults: true))
        h.submit([op("a")])
        let events = published(h.send(.workerJoined(WorkerHello(worker: 1, name: "w1", slots: 1, kinds: ["noop"]))))
        #expect(events.allSatisfy { $0.stream == third && $0.watchers == [1] })
        #expect(!events.isEmpty)
        _ = second
    }
}
