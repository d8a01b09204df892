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

        // Each change of state from now on, until it is finished.
        let start = ContinuousClock.now
        let watcher = Task {
            var executingSince: Duration?, executingFor = Duration.zero
            for await s in list.stateChanges {
                let at = ContinuousClock.now - start
                let progress = s.fraction.map { " \(Int($0 * 100))%" } ?? ""
                print(String(format: "  %5.2f s  %@%@", at.seconds, s.state.description, progress))
                if s.state == .executing, executingSince == nil { executingSince = at }
                if s.state == .finished, let since = executingSince { executingFor = at - since }
            }
            return executingFor
        }

        try queue.addOperation(list)
        let photos = try await list.value
        let executingFor = await watcher.value

        print("\(photos.count) photos: " + photos.map(\.name).joined(separator: ", "))
        let work = Double(request.pages * request.pageDelayMs) / 1000
        print(String(format: "executing for %.2f s while the request ran on its own queue (%d pages × %d ms)",
                     executingFor.seconds, request.pages, request.pageDelayMs))
        guard photos.count == request.count else { print("finished before its work: \(photos.count) photos"); exit(1) }
        guard executingFor.seconds >= work * 0.75 else { print("executing for less than the work takes"); exit(1) }
        coordinator.close()
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
