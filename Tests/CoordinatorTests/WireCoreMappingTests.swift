@testable import Coordinator
import SchedulerCore
import Testing
import WireProtocol

/// SUBMIT's operations as the core's specs: defaults, and priorities the wire can carry but a spec cannot.
struct WireCoreMappingTests {
    @Test func aPriorityThatIsNoneOfTheFiveIsReportedByIndex() {
        var a = WireOperation(); a.id = "a"; a.kind = "noop"; a.priority = 3
        var b = WireOperation(); b.id = "b"; b.kind = "noop"; b.priority = 8
        let (specs, unknown) = WireCoreMapping.operations([a, b])
        #expect(unknown == [0: 3])
        #expect(specs.map(\.priority) == [.normal, .veryHigh])
        // The core lists it as it always has (SubmitRulesTests), and it reaches the client as before.
        let error = WireCoreMapping.submitProblem(.invalidPriority(op: "a", 3))
        #expect(error.problem == .invalidField && error.opID == "a" && error.field == "priority")
        #expect(error.message == "a: invalid priority 3 (use -8, -4, 0, 4, 8)")
    }

    @Test func absentFieldsAreTheDefaults() {
        var w = WireOperation(); w.id = "a"; w.kind = "k"
        #expect(WireCoreMapping.operations([w]).specs == [OperationSpec(id: "a", kind: "k")])
        w.name = "a"; w.timeoutUs = 5; w.retryDelayUs = OperationSpec.defaultRetryDelayMicros; w.retryDelayMaxUs = 7
        w.qos = .utility; w.policy = .succeeded
        let spec = WireCoreMapping.operations([w]).specs[0]
        #expect(spec.givenName == "a" && spec.timeoutMicros == 5 && spec.qos == .utility && spec.policy == .succeeded)
        #expect(spec.retryDelayMicros == nil && spec.retryDelayMaxMicros == 7, "a default given is kept as nil, as the journal gives it back")
    }

    /// (1.10) The core's row goes on the wire as row + 1 (0 is "none"), and comes back from a report as
    /// the row; a report without one (a 1.9 worker) is looked up by id.
    @Test func theDispatchTokenIsTheRowPlusOneOnTheWire() {
        let d = Dispatch(worker: 1, op: "r/a", part: 0, parts: 1, attempt: 1, kind: "noop", payload: [], inputs: [],
                         priority: 0, qos: .default, token: 0)
        #expect(WireCoreMapping.dispatchRecord(d).token == 1)
        #expect(WireCoreMapping.partRef(worker: 1, "r/a", part: 0, attempt: 1, token: 1).token == 0)
        #expect(WireCoreMapping.partRef(worker: 1, "r/a", part: 0, attempt: 1, token: 0).token == nil)
    }
}
