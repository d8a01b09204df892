import Testing
@testable import ZeroMQ

/// The one rule by which opctl, the Swift API and opworker tell "my keys are refused" from "the
/// coordinator is restarting" (PROTOCOL.md §12). Pure: events in, a reason or nil out.
struct HandshakeWatchTests {
    func event(_ kind: MonitorEvents, _ value: UInt32 = 0) -> MonitorEvent {
        MonitorEvent(kind: kind, value: value, endpoint: "tcp://127.0.0.1:7600")
    }

    @Test func aRefusedKeyOrAMechanismMismatchIsSaidAtOnce() {
        var keyed = HandshakeWatch(keyed: true, patience: .seconds(1))
        #expect(keyed.observe(event(.handshakeFailedAuth, 400), at: .now)?.contains("does not allow this key (status 400)") == true)
        var plain = HandshakeWatch(keyed: false, patience: .seconds(1))
        let mismatch = event(.handshakeFailedProtocol, UInt32(ZMQProtocolError.mechanismMismatch))
        #expect(plain.observe(mismatch, at: .now)?.contains("requires keys (CURVE): pass --key") == true)
        #expect(keyed.observe(mismatch, at: .now)?.contains("does not use keys") == true)
        #expect(plain.observe(event(.handshakeFailedProtocol, UInt32(ZMQProtocolError.cryptographic) + 99), at: .now) == nil,
                "other protocol errors are not about keys")
    }

    @Test func closedHandshakesCountOnlyThreeInARowOverThePatience() {
        let t0 = ContinuousClock.now
        var w = HandshakeWatch(keyed: true, patience: .seconds(1))
        // A coordinator going down: three quick closes, then a completed handshake.
        #expect(w.observe(event(.disconnected), at: t0) == nil)
        #expect(w.observe(event(.disconnected), at: t0 + .milliseconds(100)) == nil)
        #expect(w.observe(event(.disconnected), at: t0 + .milliseconds(300)) == nil, "three closes within the patience")
        #expect(w.observe(event(.handshakeSucceeded), at: t0 + .milliseconds(400)) == nil)
        // A connection that was up and is lost is not a refused handshake.
        #expect(w.observe(event(.disconnected), at: t0 + .seconds(5)) == nil)
        // Another coordinator key: every handshake closed, for longer than the patience.
        #expect(w.observe(event(.disconnected), at: t0 + .seconds(6)) == nil)
        #expect(w.observe(event(.disconnected), at: t0 + .milliseconds(6500)) == nil)
        #expect(w.observe(event(.disconnected), at: t0 + .seconds(7))?.contains("--coordinator-key is probably not its public key") == true)
        var plain = HandshakeWatch(keyed: false, patience: .seconds(1))
        for k in 0..<2 { #expect(plain.observe(event(.disconnected), at: t0 + .seconds(k)) == nil) }
        #expect(plain.observe(event(.disconnected), at: t0 + .seconds(2)) == "the coordinator closed every connection during the handshake: it probably requires keys (CURVE): pass --key YOUR.key and --coordinator-key ITS-PUBLIC-KEY (or $OPQ_KEY, $OPQ_COORDINATOR_KEY)")
    }
}
