import OpModel
import Testing

/// QoS ranks, priorities and the seconds ↔ microseconds conversion of spec durations.
struct VocabularyTests {
    @Test func qosRanksRoundTripAndOrderDispatch() {
        #expect(OperationQoS.allCases.map(\.rank) == [4, 3, 2, 1, 0])
        for qos in OperationQoS.allCases { #expect(OperationQoS(rank: qos.rank) == qos) }
        #expect(OperationQoS(rank: 5) == nil && OperationQoS(rank: -1) == nil)
        #expect(OperationQoS.background < .utility && OperationQoS.userInitiated < .userInteractive)
    }

    @Test func prioritiesAreFoundationsFive() {
        #expect(OperationPriority.allCases.map(\.rawValue) == [-8, -4, 0, 4, 8])
        #expect(OperationPriority(rawValue: 3) == nil)
    }

    @Test func secondsBecomeWholeMicrosecondsAndComeBack() {
        #expect(Microseconds.from(seconds: 1.5) == 1_500_000)
        #expect(Microseconds.from(seconds: 0.29) == 290_000)   // to the nearest, not 289,999
        #expect(Microseconds.from(seconds: -5) == -5_000_000)
        for k in 1...100_000 {
            let seconds = Double(k) / 1000
            #expect(Microseconds.seconds(Microseconds.from(seconds: seconds)) == seconds)
        }
        // What validation must still name comes back as it was; huge values saturate.
        #expect(Microseconds.seconds(Microseconds.from(seconds: .infinity)) == .infinity)
        #expect(Microseconds.seconds(Microseconds.from(seconds: -.infinity)) == -.infinity)
        #expect(Microseconds.seconds(Microseconds.from(seconds: .nan)).isNaN)
        #expect(Microseconds.from(seconds: 1e300) == .max - 1 && Microseconds.from(seconds: -1e300) == .min + 2)
    }

    @Test func specsKeepMicrosecondsAndShowSeconds() {
        var spec = OperationSpec(id: "a", kind: "noop", timeout: 1.5, retryDelay: 0)
        #expect(spec.timeoutMicros == 1_500_000 && spec.retryDelayMicros == 0 && spec.retryDelayMaxMicros == nil)
        #expect(spec.timeout == 1.5 && spec.retryDelay == 0 && spec.retryDelayMax == nil)
        #expect(spec.name == "a" && spec.givenName == nil)
        spec.name = "A"
        #expect(spec.givenName == "A")
        #expect(OperationSpec.retryDelayMicros(OperationSpec.defaultRetryDelayMicros) == nil)
        #expect(OperationSpec.retryDelayMaxMicros(7) == 7)
    }
}
