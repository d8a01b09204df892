import DistributedOperationQueue
import ExampleOperations
import Foundation
import Synchronization

/// `completionBlock`: code that runs in this process once an operation has finished — succeeded,
/// failed or cancelled — as the seeds' `setCompletionBlock:^{ NSLog(@"Complete"); }`.
///
/// Three `SquareRoots` operations (the seeds' `MyLengthOperation`) in a serial queue: one succeeds,
/// one fails with its typed error (a count below 1), one is cancelled while it waits. Each completion
/// block runs once, on the coordinator object's callback queue, in the order the operations finished,
/// and before `waitUntilFinished` returns. The block has no result to hand over (as in Foundation); the
/// typed result is `try await op.value`.
///
/// Usage: example-completion-block   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
@main
struct CompletionBlock {
    static func main() async throws {
        let coordinator = try await RemoteCoordinator.connect()
        let queue = RemoteOperationQueue(name: "square-roots", coordinator: coordinator)
        try queue.setMaxConcurrentOperationCount(1)
        try queue.setSuspended(true)                 // so the third one is still waiting when it is cancelled

        let log = CompletionLog()
        let sums = TypedRemoteOperation(SquareRoots(count: 100_000), name: "sums")
        let bad = TypedRemoteOperation(SquareRoots(count: 0), name: "bad count")
        let skipped = TypedRemoteOperation(SquareRoots(count: 1_000_000), name: "skipped")
        for op in [sums, bad, skipped] {
            op.completionBlock = {
                let how = switch op.outcome {
                case .succeeded?: "succeeded"
                case .failed?: "failed"
                case .cancelled(let reason)?: "cancelled: \(reason)"
                case nil: "no outcome?"
                }
                print("Complete: \(op.name) (\(how))")
                log.append(op.name)
            }
        }
        try await queue.addOperations([sums, bad, skipped])
        skipped.cancel()                             // cancelled while waiting: it never runs, its block still does
        try queue.setSuspended(false)

        await queue.waitUntilAllOperationsAreFinished()
        // Every block has run by now, once each, in finish order ("skipped" first: it finished when cancelled).
        print("completion blocks ran: \(log.names.joined(separator: ", "))")
        guard log.names.sorted() == ["bad count", "skipped", "sums"] else { print("expected each block once"); exit(1) }
        guard log.names.first == "skipped" else { print("expected the cancelled one to finish first"); exit(1) }

        // The typed results: a value, the operation's own error type, and the cancellation.
        print("sums = \(try await sums.value)")
        do {
            _ = try await bad.value
            print("bad count should have failed"); exit(1)
        } catch let e as SquareRootsError {
            print("bad count threw \(e)")
        }
        do {
            _ = try await skipped.value
            print("skipped should have been cancelled"); exit(1)
        } catch RemoteOperationError.cancelled(let reason) {
            print("skipped was cancelled: \(reason)")
        }
        coordinator.close()
    }
}

/// The names the completion blocks recorded, in the order they ran (they run on one serial queue).
final class CompletionLog: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ name: String) { entries.withLock { $0.append(name) } }
    var names: [String] { entries.withLock { $0 } }
}
