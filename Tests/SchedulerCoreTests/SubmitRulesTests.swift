import Testing
@testable import SchedulerCore

@Suite struct SubmitRulesTests {
    /// Each bad batch must be rejected as a whole, with every problem listed.
    @Test func testRejectedBatchesListEveryProblem() {
        let cases: [(String, [OperationSpec], [QueueSpec], [SubmitProblem])] = [
            ("duplicate in batch", [op("a"), op("a")], [], [.duplicateId("a")]),
            ("duplicate of accepted", [op("old")], [], [.duplicateId("old")]),
            ("unknown dependency", [op("a", ["nope"])], [], [.unknownDependency(op: "a", dependency: "nope")]),
            ("self cycle", [op("a", ["a"])], [], [.cycle(["a"])]),
            ("three-cycle", [op("x", ["z"]), op("y", ["x"]), op("z", ["y"]), op("free")], [],
             [.cycle(["x", "z", "y"])]),
            ("invalid queue", [op("a")], [QueueSpec(name: "q", maxConcurrent: -2)],
             [.invalidQueue(name: "q", reason: "maxConcurrent must be -1 or ≥ 0, got -2")]),
            ("several at once", [op("a"), op("a", ["ghost"])], [],
             [.duplicateId("a"), .unknownDependency(op: "a", dependency: "ghost")]),
        ]
        for (name, specs, qs, expected) in cases {
            var h = Harness()
            h.submit([op("old")])
            let before = h.s.totalOperations
            let (reply, _) = h.submit(specs, queues: qs)
            guard case .rejected(let problems)? = reply else { Issue.record("\(name): accepted"); continue }
            #expect(Set(problems.map(\.description)) == Set(expected.map(\.description)), "\(name)")
            #expect(h.s.totalOperations == before, "\(name): part of a rejected batch was accepted")
            #expect(h.s.queueIndex["q"] == nil, "\(name): queue of a rejected batch was created")
        }
    }

    /// A priority that is none of the five (the wire carries any integer, a spec cannot) is listed in
    /// its op's place among the other problems.
    @Test func testUnknownPriorityIsListedInPlace() {
        var h = Harness()
        let (reply, _) = h.submit([op("a"), op("a", ["ghost"]), op("b")], unknownPriorities: [0: 1, 2: 3])
        #expect(reply == .rejected([.invalidPriority(op: "a", 1), .duplicateId("a"), .invalidPriority(op: "b", 3),
                                    .unknownDependency(op: "a", dependency: "ghost")]))
        #expect(h.s.totalOperations == 0)
    }

    @Test func testCycleErrorNamesTheOpsOnTheCycle() {
        var h = Harness()
        let (reply, _) = h.submit([op("a", ["c"]), op("b", ["a"]), op("c", ["b"]), op("d", ["c"])])
        guard case .rejected(let p)? = reply, case .cycle(let ids) = p.first else { Issue.record("no cycle"); return }
        #expect(Set(ids) == ["a", "b", "c"])
        #expect(!ids.contains("d"), "d is behind the cycle, not on it")
    }

    @Test func testAcceptedBatchAndForwardReferencesInsideIt() {
        var h = Harness()
        h.join(9, credit: 0)   // a live worker that can run them: no unplaceable warning
        let (reply, _) = h.submit([op("b", ["a"]), op("a")])
        #expect(reply == .accepted(count: 2))
        #expect(h.drain(h.join(1)) == ["a", "b"])
    }

    @Test func testPolicySucceededCancelsNamingTheFailedDependency() {
        var h = Harness()
        var b = op("b", ["a"]); b.policy = .succeeded
        var c = op("c", ["a"]); c.policy = .finished
        h.submit([op("a"), b, c])
        let d = h.join(1)
        let next = dispatches(h.finish(d[0], .failed("boom")))
        #expect(h.s.status("b")?.outcome == .cancelled)
        #expect(h.s.status("b")?.errorText == "dependency a failed")
        #expect(next.map(\.op) == ["c"], "policy finished runs after a failed dependency")
        // A later op with policy succeeded on an already failed op is cancelled at once.
        var late = op("late", ["a"]); late.policy = .succeeded
        h.submit([late])
        #expect(h.s.status("late")?.outcome == .cancelled)
    }

    @Test func testResultsOfFinishedDependenciesBecomeInputs() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c", ["a", "b"])])
        let d = h.join(1, slots: 2)
        h.finish(d[0], .succeeded([7]))
        let next = dispatches(h.finish(d[1], .failed("x")))
        #expect(next.count == 1)
        #expect(next[0].inputs.map(\.0) == ["a"])
        #expect(next[0].inputs.map(\.1) == [[7]])
    }

    @Test func testJournalRecordsAcceptedBatchesAndFinishes() {
        var h = Harness()
        let out = h.send(.submit(h.ref(), ops: [op("a")], queues: []))
        #expect(out.contains(.journal(.submitted(run: "", submitter: "", ops: [op("a")], queues: [], key: nil))))
        let d = h.join(1)
        #expect(h.finish(d[0]).contains { if case .journal(.finished("a", .succeeded([]), _, _)) = $0 { return true }; return false })
        let rejected = h.send(.submit(h.ref(), ops: [op("a")], queues: []))
        #expect(!rejected.contains { if case .journal = $0 { return true } else { return false } })
    }
}
