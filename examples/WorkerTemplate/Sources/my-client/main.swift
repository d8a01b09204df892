// Adds one CountWords operation and prints its result. Coordinator: $OPCOORD, else tcp://127.0.0.1:7600.
import DistributedOperationQueue
import MyOperations

let text = CommandLine.arguments.dropFirst().joined(separator: " ")
let coordinator = try await RemoteCoordinator.connect()
let queue = RemoteOperationQueue(name: "words", coordinator: coordinator)
let count = try queue.addOperation(CountWords(text: text.isEmpty ? "to be or not to be" : text))
do {
    let result = try await count.value
    print("\(result.total) words, \(result.distinct) distinct; most frequent: \(result.top.joined(separator: ", "))")
} catch let e as CountWordsError {
    print("CountWords refused its input: \(e)")
}
