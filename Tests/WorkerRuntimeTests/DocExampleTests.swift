import Testing
import WorkerRuntime

// The example of docs/HANDLERS.md, verbatim.

/// Counts the words of every dependency's result; the payload is the word to look for.
struct CountWord: OperationHandler {
    var kind: String { "countWord" }

    func run(_ context: OperationContext) async throws -> [UInt8] {
        let word = String(decoding: context.payload, as: UTF8.self)
        guard !word.isEmpty else { throw HandlerError("payload must be the word to count") }  // → failed(…)
        var total = 0
        for (index, input) in context.inputList.enumerated() {                // dependency results, in `after` order
            try Task.checkCancellation()                                      // cancel → cancelled(reason)
            total += String(decoding: input.result, as: UTF8.self)
                .split(whereSeparator: { $0 == " " || $0 == "\n" }).filter { $0 == word }.count
            context.reportProgress(Double(index + 1) / Double(context.inputList.count), message: input.id)
        }
        context.logger.debug("counted", metadata: ["word": "\(word)", "total": "\(total)"])
        return Array("\(word)=\(total)".utf8)                                // → succeeded(bytes)
    }
}

@Suite struct DocExampleTests {
    @Test func countWordAlone() async throws {
        let context = OperationContext(part: DispatchedPart(
            key: PartKey(opID: "count"), kind: "countWord", payload: Array("queue".utf8),
            inputs: [.init(id: "a", result: Array("queue worker queue".utf8)), .init(id: "b", result: Array("queue".utf8))]))
        let result = try await CountWord().run(context)      // "queue=3"
        #expect(String(decoding: result, as: UTF8.self) == "queue=3")
    }

    @Test func countWordInAQueue() async throws {
        var registry = HandlerRegistry()           // the built-ins are already in it
        registry.register(CountWord())
        registry.register(kind: "upper") { context in Array(String(decoding: context.payload, as: UTF8.self).uppercased().utf8) }
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 2, registry: registry, eventSink: recorder.sink)
        let empty = PartKey(opID: "empty")
        queue.submit(DispatchedPart(key: empty, kind: "countWord"))
        let upper = PartKey(opID: "up")
        queue.submit(DispatchedPart(key: upper, kind: "upper", payload: Array("abc".utf8)))
        #expect(try await recorder.waitFinished(empty) == .failed("payload must be the word to count"))
        #expect(try await recorder.waitFinished(upper) == .succeeded(Array("ABC".utf8)))
    }
}
