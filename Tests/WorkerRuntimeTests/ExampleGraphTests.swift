import Foundation
import OpSpec
import Testing
@testable import WorkerRuntime

let examplesDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("examples")

/// Runs the example graphs for real on a local queue, with a tiny stand-in for the coordinator
/// (dispatch when every dependency has finished; results become inputs), so the shell in the
/// examples is known to work.
@Suite struct ExampleGraphTests {
    /// Runs `graph`; cancels each op in `cancel` as soon as it has started.
    func run(_ graph: Graph, slots: Int = 2, extraEnv: [String: String] = [:], cancel: Set<String> = [])
        async throws -> [String: OperationOutcome]
    {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: slots, eventSink: recorder.sink)
        let queueQoS = Dictionary(uniqueKeysWithValues: graph.queues.map { ($0.name, $0.qos) })
        var outcomes: [String: OperationOutcome] = [:]
        var submitted = Set<String>()
        var cancelled = Set<String>()
        var seen = 0
        while outcomes.count < graph.operations.count {
            for op in graph.operations where !submitted.contains(op.id) && op.after.allSatisfy({ outcomes[$0] != nil }) {
                var payload = op.payload
                if op.kind == "shell", !extraEnv.isEmpty {
                    var command = try ShellCommand.decode(payload)
                    command.env.merge(extraEnv) { own, _ in own }
                    payload = command.encoded()
                }
                let inputs = op.after.compactMap { id in outcomes[id]?.result.map { DispatchedPart.Input(id: id, result: $0) } }
                queue.submit(DispatchedPart(key: PartKey(opID: op.id), name: op.name, kind: op.kind, payload: payload, inputs: inputs,
                                            priority: op.priority, qos: op.qos ?? queueQoS[op.queue] ?? .default))
                submitted.insert(op.id)
            }
            let before = seen
            let events = try await recorder.wait("graph progress", timeout: .seconds(30)) { $0.count > before }
            for event in events[seen...] {
                switch event {
                case .started(let key) where cancel.contains(key.opID) && !cancelled.contains(key.opID):
                    cancelled.insert(key.opID)
                    queue.cancel(opID: key.opID, reason: "cancelled by the demo")
                case .finished(let key, let outcome, _):
                    outcomes[key.opID] = outcome
                default: break
                }
            }
            seen = events.count
        }
        return outcomes
    }

    @Test func pipelineRunsAndTheCancelledBranchDoesNotBlockTheSummary() async throws {
        let graph = try GraphFile.load(path: examplesDir.appendingPathComponent("pipeline.yaml").path)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-demo-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcomes = try await run(graph, extraEnv: ["OPQ_DEMO_DIR": dir, "OPQ_DEMO_SCALE": "1"], cancel: ["offscreen-rows"])
        #expect(outcomes["offscreen-rows"] == .cancelled("cancelled by the demo"))
        for (id, outcome) in outcomes where id != "offscreen-rows" {
            #expect(outcome.isSucceeded, "\(id): \(outcome)")
        }
        let summary = text(outcomes["summary"]?.result)
        if ProcessInfo.processInfo.environment["OPQ_SHOW"] != nil { print(summary) }
        #expect(summary.hasPrefix("== summary =="))
        for n in 1...4 {
            #expect(summary.contains("img\(n) sepia: 16000 pixels, mean brightness"), "\(summary)")
            #expect(summary.contains("out/img\(n)-sepia.ppm"))
        }
        #expect(summary.contains("top words: operation="))
        #expect(summary.contains("offscreen-rows: (no result)") == false)  // a cancelled op gives no input file
        #expect(text(outcomes["top-words"]?.result).split(separator: ",").count == 3)
    }

    @Test func pipelineFailsClearlyWithoutItsDirectory() async throws {
        var graph = try GraphFile.load(path: examplesDir.appendingPathComponent("pipeline.yaml").path)
        graph.operations = graph.operations.filter { $0.id == "prepare" }
        let outcomes = try await run(graph, extraEnv: ["OPQ_DEMO_DIR": ""])
        #expect(outcomes["prepare"]?.message?.hasPrefix("exit code 2:") == true)
        #expect(outcomes["prepare"]?.message?.contains("set OPQ_DEMO_DIR to a scratch directory") == true)
    }

    @Test func diamondPassesResultsAlong() async throws {
        for file in ["diamond.yaml", "diamond.json"] {
            let graph = try GraphFile.load(path: examplesDir.appendingPathComponent(file).path)
            let outcomes = try await run(graph)
            #expect(outcomes["d"] == .succeeded(bytes("b=HELLO c=5\n")), "\(file)")
        }
    }

    @Test func prioritiesExampleRunsOnOneSlot() async throws {
        let graph = try GraphFile.load(path: examplesDir.appendingPathComponent("priorities.yaml").path)
        let outcomes = try await run(graph, slots: 1)
        #expect(outcomes.values.allSatisfy { $0.isSucceeded })
    }
}
