import DistributedOperationQueue
import Foundation
import TypedTestOperations

// A client that goes away without closing (ClosureProcessGoneTests kills it): one closure runs, one
// waits for a long remote operation. Prints "IDS <waiting> <running> <gate>" once the first runs, then waits.
let coordinator = try RemoteCoordinator(endpoint: CommandLine.arguments[1], timeout: .seconds(5))
let queue = RemoteOperationQueue(name: "gone", coordinator: coordinator)
let gate = TypedRemoteOperation(Nap(milliseconds: 60_000))
let waiting = LocalOperation(name: "waiting") {}
try waiting.addDependency(gate)
let running = LocalOperation(name: "running") { try await Task.sleep(for: .seconds(600)) }
try queue.addOperations([gate, waiting, running], waitUntilFinished: false)
for await s in running.stateChanges where s.state == .executing { break }
FileHandle.standardOutput.write(Data("IDS \(waiting.id) \(running.id) \(gate.id)\n".utf8))
while true { sleep(60) }
