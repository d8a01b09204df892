import Testing
@testable import WireProtocol

/// (1.9, PROTOCOL.md §14) The leadership epoch on the wire and the fence that keeps the highest.
@Suite struct EpochWireTests {
    @Test func everyStampedMessageCarriesTheEpochThroughTheCodec() throws {
        let messages: [Message] = [
            .welcome(WireWelcome.with { $0.workerID = "w-1"; $0.heartbeatIntervalMs = 1000; $0.liveness = 3 }),
            .dispatch(WireDispatch()), .cancel(WireCancel()), .disconnect(WireDisconnect()),
            .submitReply(WireSubmitReply()), .ack(WireAck()), .statusReply(WireStatusReply()), .whyReply(WireWhyReply()),
            .workersReply(WireWorkersReply()), .event(WireEvents()), .waitReply(WireWaitReply()),
            .error(WireErrorReply.with { $0.code = .notLeader; $0.message = "x" }),
            .runsReply(WireRunsReply()), .logsReply(WireLogsReply()), .storyReply(WireStoryReply()),
        ]
        for m in messages {
            let stamped = m.stamped(epoch: 300)
            #expect(stamped.epoch == 300, "\(m.command)")
            let body = WireCodec.body(of: stamped)
            #expect(body.suffix(4) == EpochField.bytes(300)[...], "\(m.command)")
        }
        #expect(Message.heartbeat.stamped(epoch: 3).epoch == nil)
        #expect(Message.status(WireStatus()).epoch == nil)
    }

    @Test func withoutAnEpochTheBytesAreThoseOf18() {
        let m = Message.dispatch(WireDispatch())
        #expect(WireCodec.body(of: m.stamped(epoch: 0)) == WireCodec.body(of: m))
        #expect(EpochField.bytes(0).isEmpty)
    }

    @Test func anEpochAppendedToAnEncodedEventBodyDecodes() throws {
        var e = WireEvent()
        e.opID = "a"
        e.sequence = 4
        let body = WireCodec.body(of: .event(WireEvents.with { $0.events = [e] })) + EpochField.bytes(1 << 40)
        let decoded = try WireEvents(serializedBytes: body)
        #expect(decoded.epoch == 1 << 40)
        #expect(decoded.events.map(\.opID) == ["a"])
    }

    @Test func theFenceKeepsTheHighestAndDropsLowerNonZeroEpochs() {
        var f = EpochFence()
        do { let v = f.admit(.ack(WireAck.with { $0.epoch = 5 })); #expect(v) }
        do { let v = f.admit(.ack(WireAck.with { $0.epoch = 4 })); #expect(!v) }
        do { let v = f.admit(.ack(WireAck())); #expect(v) }   // epoch 0: a coordinator without --ha
        do { let v = f.admit(.heartbeat); #expect(v) }
        do { let v = f.admit(.ack(WireAck.with { $0.epoch = 5 })); #expect(v) }
        do { let v = f.admit(.ack(WireAck.with { $0.epoch = 9 })); #expect(v) }
        do { let v = f.admit(.dispatch(WireDispatch.with { $0.epoch = 5 })); #expect(!v) }
        #expect(f.highest == 9)
        #expect(f.fenced == 2)
    }

    @Test func notLeaderTextNamesTheLeaderOrNone() {
        #expect(NotLeader.text(leader: "tcp://b:7600") == "not the leader; leader: tcp://b:7600")
        #expect(NotLeader.leader(in: NotLeader.text(leader: "tcp://b:7600")) == "tcp://b:7600")
        #expect(NotLeader.leader(in: NotLeader.noLeaderText) == nil)
        #expect(NotLeader.leader(in: "something else") == nil)
    }
}
