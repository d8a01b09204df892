import Testing
import ZeroMQ

@Suite struct PubSubTests {
    /// Subscriptions travel to the publisher asynchronously ("slow joiner"), so publish until the first
    /// message arrives, bounded in count and time.
    @Test func subscriberGetsOnlyMatchingTopics() throws {
        let ctx = try Context()
        let pub = try makeSocket(ctx, .pub)
        let endpoint = try bindAnywhere(pub, tcp: true)
        let sub = try makeSocket(ctx, .sub)
        try sub.set(.subscribe, bytes("events."))
        try sub.connect(endpoint)
        let poller = Poller()
        poller.add(sub)

        var joined = false
        for _ in 0..<300 where !joined {
            try pub.sendMultipart([bytes("events.hello"), bytes("probe")])
            joined = try poller.poll(timeout: .milliseconds(10)) > 0
        }
        #expect(joined)
        while try sub.receiveMultipart(flags: .dontWait) != nil {}

        try pub.sendMultipart([bytes("other.topic"), bytes("filtered out")])
        try pub.sendMultipart([bytes("events.op"), bytes("delivered")])
        #expect(try sub.receiveMultipart() == [bytes("events.op"), bytes("delivered")])
        #expect(try sub.receive(flags: .dontWait) == nil)
    }
}
