import Testing
@testable import WorkerAgent
import WorkerRuntime

/// The handlers' events reach the socket thread through `EventInbox`; it is woken once per batch it
/// takes, not once per event (an eventfd write each: two per part).
@Suite struct EventInboxTests {
    let key = PartKey(opID: "a", part: 0, attempt: 1)

    @Test func onlyTheFirstEventOfABatchAsksForAWake() {
        let inbox = EventInbox()
        let first = inbox.append(.started(key))
        let second = inbox.append(.finished(key, .succeeded([])))
        #expect(first && !second)
        let taken = inbox.take()
        #expect(taken.map(\.event) == [.started(key), .finished(key, .succeeded([]))], "in order, none lost")
        #expect(taken[0].at < taken[1].at, "stamps strictly increase")
        let afterTake = inbox.append(.started(PartKey(opID: "b", part: 0, attempt: 1)))
        #expect(afterTake, "an emptied inbox asks again")
    }
}
