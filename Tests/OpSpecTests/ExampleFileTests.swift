import Foundation
import OpSpec
import Testing

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let examplesDir = packageRoot.appendingPathComponent("examples")

@Suite struct ExampleFileTests {
    @Test func everyExampleParses() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: examplesDir.path)
            .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") || $0.hasSuffix(".json") }
        #expect(files.count >= 4)
        for file in files {
            do {
                let graph = try GraphFile.load(path: examplesDir.appendingPathComponent(file).path)
                #expect(!graph.operations.isEmpty, "\(file)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func pipelineHasTheDemoShape() throws {
        let graph = try GraphFile.load(path: examplesDir.appendingPathComponent("pipeline.yaml").path)
        let byID = Dictionary(uniqueKeysWithValues: graph.operations.map { ($0.id, $0) })
        #expect(graph.queues.map(\.name) == ["download", "filter", "report"])
        #expect(graph.queues[0].maxConcurrent == 2 && graph.queues[0].qos == .userInitiated)
        #expect(graph.operations.count == 13)
        #expect(graph.operations.allSatisfy { $0.kind == "shell" })
        let summary = try #require(byID["summary"])
        #expect(Set(summary.after) == ["sepia-img-1", "sepia-img-2", "sepia-img-3", "sepia-img-4", "top-words", "offscreen-rows"])
        let offscreen = try #require(byID["offscreen-rows"])
        #expect(offscreen.priority == .veryLow && offscreen.qos == .background)
        #expect(try ShellCommand.decode(offscreen.payload).grace == 1)
        // The YAML alias shares one script between the four downloads; only SEED differs.
        let one = try ShellCommand.decode(try #require(byID["download-img-1"]).payload)
        let two = try ShellCommand.decode(try #require(byID["download-img-2"]).payload)
        #expect(one.program == two.program && one.env == ["SEED": "1"] && two.env == ["SEED": "2"])
        #expect(byID["sepia-img-1"]?.priority == .veryHigh && byID["sepia-img-4"]?.priority == .low)
        #expect(byID["sepia-img-1"]?.timeout == 60)
        #expect(byID["download-corpus"]?.retries == 2)
        // Work that needs its inputs does not run after a dependency failed; only the summary reports
        // whatever happened (issue 25, finding 8).
        for op in graph.operations where !op.after.isEmpty {
            #expect(op.policy == (op.id == "summary" ? .finished : .succeeded), "\(op.id)")
        }
    }

    @Test func diamondYAMLAndJSONAgree() throws {
        let yaml = try GraphFile.load(path: examplesDir.appendingPathComponent("diamond.yaml").path)
        let json = try GraphFile.load(path: examplesDir.appendingPathComponent("diamond.json").path)
        #expect(yaml.operations.map(\.id) == json.operations.map(\.id))
        #expect(yaml.operations.map(\.after) == json.operations.map(\.after))
        #expect(yaml.operations.map(\.kind) == ["echo", "shell", "shell", "shell"])
        #expect(yaml.operations[0].payload == Array("hello".utf8))
        #expect(json.operations[3].policy == .succeeded)
        #expect(try ShellCommand.decode(json.operations[2].payload).program == .argv(["sh", "-c", "wc -c < \"$OPQ_INPUT_A\""]))
    }

    @Test func prioritiesTakeNamesAndIntegers() throws {
        let graph = try GraphFile.load(path: examplesDir.appendingPathComponent("priorities.yaml").path)
        let byID = Dictionary(uniqueKeysWithValues: graph.operations.map { ($0.id, $0) })
        #expect(byID["high-2"]?.priority == .high && byID["low-2"]?.priority == .low)
        #expect(byID["norm-1"]?.priority == .normal && byID["top-2"]?.qos == .userInteractive)
        #expect(byID["gate"]?.payload == Array("200".utf8))
        #expect(graph.queues == [QueueSpec(name: "serial", maxConcurrent: 1)])
    }
}
