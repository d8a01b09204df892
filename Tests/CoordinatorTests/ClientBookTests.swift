@testable import Coordinator
import SchedulerCore
import Testing
import WireProtocol

/// `ClientBook`: what the loop owes clients beyond one reply per request, without sockets or clocks.
struct ClientBookTests {
    private let a = ClientRef(client: 1, request: 10)
    private let b = ClientRef(client: 2, request: 20)

    private func wait(deadline: Int64?) -> WaitRequest {
        WaitRequest(ids: ["x"], queue: "", run: "", withResults: false, deadline: deadline)
    }

    @Test func aRequestAnsweredBySeveralCoreRepliesIsAnsweredOnceAfterTheLast() {
        var book = ClientBook()
        #expect(book.collect(.ok, for: a) == .notCollected, "an ordinary reply goes out as it is")
        // SET-PRIORITY of three ids: one unknown, two applied.
        book.expect(3, repliesFor: a)
        #expect(book.collect(.error(.notFound("unknown operation(s): p")), for: a) == .waiting)
        #expect(book.collect(.ok, for: b) == .notCollected, "another request is not counted")
        #expect(book.collect(.ok, for: a) == .waiting)
        #expect(book.collect(.ok, for: a) == .ack(affected: 2), "something took effect: ACK, not the error")
        #expect(book.collect(.ok, for: a) == .notCollected, "answered once, then forgotten")
        #expect(book.clientsOwed.isEmpty)
    }

    @Test func whenNothingTookEffectTheFirstRefusalIsTheAnswer() {
        var book = ClientBook()
        book.expect(2, repliesFor: a)
        #expect(book.collect(.error(.invalid("maxConcurrent must be -1 or ≥ 0, got -5")), for: a) == .waiting)
        #expect(book.collect(.error(.notFound("unknown queue q")), for: a)
                == .error(.invalid("maxConcurrent must be -1 or ≥ 0, got -5")))
        // One core reply: a WATCH of an unknown run is refused with the core's cause.
        book.expect(1, repliesFor: b)
        #expect(book.collect(.error(.notFound("unknown run r7")), for: b) == .error(.notFound("unknown run r7")))
        // Replies that are neither ok nor refusals only count down.
        book.expect(1, repliesFor: a)
        #expect(book.collect(.waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 0)), for: a) == .ack(affected: 0))
    }

    @Test func waitsExpireEarliestDeadlineFirstAndNextDeadlineFollows() {
        var book = ClientBook()
        #expect(book.nextDeadline == nil)
        #expect(book.expired(now: .max).isEmpty)
        let c = ClientRef(client: 3, request: 30)
        let forever = ClientRef(client: 4, request: 40)
        book.wait(wait(deadline: 300), for: a)
        book.wait(wait(deadline: 100), for: b)
        book.wait(wait(deadline: 200), for: c)
        book.wait(wait(deadline: nil), for: forever)
        #expect(book.nextDeadline == 100)
        #expect(book.expired(now: 99).isEmpty, "nothing before its deadline")
        // The loop slept past two deadlines: both end, the earlier first.
        #expect(book.expired(now: 250).map(\.ref) == [b, c])
        #expect(book.nextDeadline == 300)
        #expect(book.endWait(b) == nil, "a timed-out wait drops the core's later reply")
        // Answered by the core before its deadline: gone, and the next deadline moves on.
        #expect(book.endWait(a)?.deadline == 300)
        #expect(book.nextDeadline == nil, "a wait without a deadline never wakes the loop")
        #expect(book.expired(now: .max).isEmpty)
        #expect(book.clientsOwed == [4])
        #expect(book.endWaits(ofClient: 4) == [forever])
        #expect(book.clientsOwed.isEmpty)
    }

    @Test func aRevokedClientsWaitsEndAndTheNextDeadlineIsRecomputed() {
        var book = ClientBook()
        book.wait(wait(deadline: 50), for: a)
        book.wait(wait(deadline: 70), for: ClientRef(client: 1, request: 11))
        book.wait(wait(deadline: 90), for: b)
        #expect(Set(book.endWaits(ofClient: 1)) == [a, ClientRef(client: 1, request: 11)])
        #expect(book.nextDeadline == 90)
        #expect(book.expired(now: 90).map(\.ref) == [b])
    }

    @Test func aWatchStreamJoinsTheCoresStreamAndEnds() {
        var book = ClientBook()
        let replaced = book.watch(5, WatchStream(requestID: 9))
        #expect(replaced == nil)
        #expect(book.stream(of: 5)?.requestID == 9 && book.stream(of: 5)?.stream == 0)
        let stale = book.joined(5, request: 8, stream: 3), current = book.joined(5, request: 9, stream: 3)
        #expect(!stale, "the reply of a WATCH that is no longer the client's")
        #expect(current)
        #expect(book.stream(of: 5)?.stream == 3)
        #expect(book.clientsOwed == [5], "a watcher is not forgotten while idle")
        let first = book.unwatch(5), second = book.unwatch(5)
        #expect(first?.stream == 3 && second == nil, "only the first ends the core's subscription")
        #expect(book.stream(of: 5) == nil)
        #expect(book.clientsOwed.isEmpty, "a client whose stream ended is owed nothing")
    }

    /// A new WATCH replaces the old one; the old one is returned, so the loop leaves its stream.
    @Test func aNewWatchReplacesTheOld() {
        var book = ClientBook()
        book.watch(5, WatchStream(requestID: 9))
        _ = book.joined(5, request: 9, stream: 3)
        let old = book.watch(5, WatchStream(requestID: 10))
        #expect(old?.stream == 3)
        #expect(book.stream(of: 5)?.stream == 0)
    }

    /// The wire code follows the core's cause, not the words of its text.
    @Test func aRefusalsCodeFollowsItsCause() {
        #expect(ReplyError.notFound("unknown queue q").wireCode == .notFound)
        #expect(ReplyError.notFound("run r3 was evicted").wireCode == .notFound, "no 'unknown' in the text, still not found")
        #expect(ReplyError.invalid("invalid priority 3 (use -8, -4, 0, 4, 8)").wireCode == .invalidArgument)
        #expect(ReplyError.invalid("unknown-looking text").wireCode == .invalidArgument)
        #expect(ReplyError.notFound("unknown run r7").description == "unknown run r7", "the text goes out unchanged")
    }

    /// The core's refusals carry the causes the wire expects (a not-found must not turn invalid).
    @Test func theCoresRefusalsMapToTheirWireCodes() {
        var core = Scheduler()
        func refusal(_ e: Event) -> ReplyError? {
            for case .reply(_, .error(let cause)) in core.handle(Input(stimulus: 1, now: 1_000, e)) { return cause }
            return nil
        }
        let r = ClientRef(client: 1, request: 1)
        let cases: [(Event, WireErrorCode, String)] = [
            (.suspend(r, queue: "nope"), .notFound, "unknown queue nope"),
            (.setQueueLimit(r, queue: "nope", maxConcurrent: 1), .notFound, "unknown queue nope"),
            (.cancelAll(r, queue: "nope"), .notFound, "unknown queue nope"),
            (.waitQueue(r, queue: "nope"), .notFound, "unknown queue nope"),
            (.cancelRun(r, run: "nope"), .notFound, "unknown run nope"),
            (.setPriority(r, id: "nope", priority: 0, inherit: false), .notFound, "unknown operation nope"),
            (.setQueueLimit(r, queue: "default", maxConcurrent: -5), .invalidArgument, "maxConcurrent must be -1 or ≥ 0, got -5"),
        ]
        for (event, code, text) in cases {
            let cause = refusal(event)
            #expect(cause?.wireCode == code, "\(event)")
            #expect(cause?.description.hasPrefix(text) == true, "\(String(describing: cause))")
        }
    }
}
