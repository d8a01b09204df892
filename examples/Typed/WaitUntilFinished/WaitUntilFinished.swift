import DistributedOperationQueue
import ExampleOperations
import Foundation

/// Waiting for operations: `addOperations(_:waitUntilFinished: true)`, `waitUntilFinished()` on one
/// operation and `waitUntilAllOperationsAreFinished()` on the queue — the seeds' way of saying "go on
/// only when this work is done".
///
/// In Foundation these block the calling thread (never call them on the main thread). Here each also
/// has an `async` form that suspends without blocking a thread: use it from async code. The blocking
/// forms remain for threads of your own; the last part shows them on one.
///
/// Usage: example-wait-until-finished   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
@main
struct WaitUntilFinished {
    static func main() async throws {
        let coordinator = try await RemoteCoordinator.connect()
        let queue = RemoteOperationQueue(name: "batch", coordinator: coordinator)
        try queue.setMaxConcurrentOperationCount(2)

        // 1. Add a batch and wait for all of it.
        let first = (0..<4).map { TypedRemoteOperation(Work("first \($0)", milliseconds: 100 + 50 * $0), name: "first \($0)") }
        try await queue.addOperations(first, waitUntilFinished: true)
        print("addOperations(waitUntilFinished: true) returned: \(first.filter(\.isFinished).count) of \(first.count) finished, operationCount = \(queue.operationCount)")
        check(first.allSatisfy(\.isFinished) && queue.operationCount == 0, "the batch should be finished")

        // 2. Add without waiting; wait for one operation, then for the whole queue.
        let second = (0..<4).map { TypedRemoteOperation(Work("second \($0)", milliseconds: 300 - 50 * $0), name: "second \($0)") }
        try await queue.addOperations(second)
        await second[0].waitUntilFinished()
        print("waitUntilFinished() on \(second[0].name) returned: it is finished = \(second[0].isFinished); operationCount = \(queue.operationCount)")
        check(second[0].isFinished, "\(second[0].name) should be finished")
        await queue.waitUntilAllOperationsAreFinished()
        print("waitUntilAllOperationsAreFinished() returned: operationCount = \(queue.operationCount)")
        check(second.allSatisfy(\.isFinished) && queue.operationCount == 0, "the queue should be empty")
        for op in first + second { print("  \(try await op.value)") }

        // 3. The blocking forms, on a thread of our own (as Foundation code would call them).
        let third = (0..<3).map { TypedRemoteOperation(Work("third \($0)", milliseconds: 100), name: "third \($0)") }
        let finishedOnThread = try await withCheckedThrowingContinuation { (c: CheckedContinuation<Int, any Error>) in
            Thread.detachNewThread {
                do {
                    for op in third { try queue.addOperation(op) }
                    queue.waitUntilAllOperationsAreFinished()        // blocks this thread only
                    c.resume(returning: third.filter(\.isFinished).count)
                } catch { c.resume(throwing: error) }
            }
        }
        print("on a thread: waitUntilAllOperationsAreFinished() returned with \(finishedOnThread) of \(third.count) finished")
        check(finishedOnThread == third.count, "the blocking wait returned early")
        coordinator.close()
    }

    /// Ends the example with status 1 when what the waits promise does not hold.
    static func check(_ condition: Bool, _ what: String) {
        if !condition { print("unexpected: \(what)"); exit(1) }
    }
}
