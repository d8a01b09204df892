import DistributedOperationQueue
import ExampleOperations
import Foundation

/// A custom asynchronous ("concurrent") operation that stays executing while its work runs elsewhere.
///
/// The seeds' `StrangeAsyncOperation` starts its work on another queue from `main()` and returns: the
/// operation is reported finished ("Finished!") before the work has printed anything. Their fix,
/// `AsyncOperation`, overrides `start()`, `isExecuting`, `isFinished` and `isAsynchronous` and sets
/// `state = .finished` from the work's callback. Here `FetchPhotoList.main` is `async` and awaits the
/// callback-style request (see ExampleOperations/PhotoList.swift), so nothing needs overriding: the
/// operation is `executing` until the request calls back, and `finished` only then.
///
/// This client watches the operation's state (`stateChanges`, the KVO of `isExecuting`/`isFinished`),
/// prints each change with the progress the request reported, and checks that the operation finished
/// after its work: with every photo of the list.
///
/// Usage: example-async-operation   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
@main
struct AsyncOperation {
    static func main() async throws {
        let coordinator = try await RemoteCoordinator.connect()
        let queue = RemoteOperationQueue(name: "photo-list", coordinator: coordinator)

        let request = FetchPhotoList(count: 8, pages: 4, pageDelayMs: 100)
        let list = TypedRemoteOperation(request, name: "photo list")
        list.completionBlock = { print("Finished!") }

        // Each change of state from now on, until it is finished (subscribed before the operation is added,
        // so none is missed; the stream buffers them for the task below).
        let start = ContinuousClock.now
        let changes = list.stateChanges
        let watcher = Task {
            var executingSince: Duration?, executingFor = Duration.zero, progressWhileExecuting = 0.0
            for await s in changes {
                let at = ContinuousClock.now - start
                let progress = s.fraction.map { " \(Int($0 * 100))%" } ?? ""
                print(String(format: "  %5.2f s  %@%@", at.seconds, s.state.description, progress))
                if s.state == .executing {
                    if executingSince == nil { executingSince = at }
                    progressWhileExecuting = max(progressWhileExecuting, s.fraction ?? 0)
                }
                if s.state == .finished, let since = executingSince { executingFor = at - since }
            }
            return (executingFor, progressWhileExecuting)
        }

        try queue.addOperation(list)
        let photos = try await list.value
        let (executingFor, progressWhileExecuting) = await watcher.value

        print("\(photos.count) photos: " + photos.map(\.name).joined(separator: ", "))
        print(String(format: "executing for %.2f s while the request ran on its own queue (%d pages × %d ms)",
                     executingFor.seconds, request.pages, request.pageDelayMs))
        // Finished only after the request called back: with every photo, and executing while pages arrived.
        guard photos.count == request.count else { print("finished before its work: \(photos.count) photos"); exit(1) }
        guard progressWhileExecuting >= 0.5 else { print("not seen executing while the request ran"); exit(1) }
        coordinator.close()
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
