import DistributedOperationQueue
import ExampleOperations
import Foundation

/// Cancelling one operation, then all of them: the tutorial's `[pendingDownload cancel]` for a row that
/// scrolled away and `[queue cancelAllOperations]` when the table goes away.
///
/// Six `Work` operations of 5 s each in a queue that runs two at once. Once two are executing:
/// - `cancel()` on one that waits: it never runs, and finishes at once, cancelled;
/// - `cancel()` on one that runs: its `main` on the worker sees `context.isCancelled` and stops early;
/// - `cancelAllOperations()` on the queue: everything else, running or waiting, ends the same way.
/// A cancel does not cascade to dependents (as in Foundation) and `value` throws
/// `RemoteOperationError.cancelled(reason:)`. The whole run takes well under the 5 s one job would.
///
/// Usage: example-cancellation   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
@main
struct Cancellation {
    static func main() async throws {
        let start = ContinuousClock.now
        let coordinator = try await RemoteCoordinator.connect()
        let queue = RemoteOperationQueue(name: "jobs", coordinator: coordinator)
        try queue.setMaxConcurrentOperationCount(2)

        let jobs = (0..<6).map { TypedRemoteOperation(Work("job \($0)", milliseconds: 5_000), name: "job \($0)") }
        try await queue.addOperations(jobs)

        // Wait (at most 10 s) until the queue runs two of them.
        let deadline = ContinuousClock.now + .seconds(10)
        while jobs.filter(\.isExecuting).count < 2 {
            guard ContinuousClock.now < deadline else { print("two jobs never started"); exit(1) }
            try await Task.sleep(for: .milliseconds(10))
        }
        let running = jobs.filter(\.isExecuting), waiting = jobs.filter { $0.state < .dispatched }
        guard let waitingOne = waiting.first else { print("no job waits"); exit(1) }

        print("cancel one that waits: \(waitingOne.name)")
        waitingOne.cancel()
        await waitingOne.waitUntilFinished()
        print("  \(waitingOne.name): finished at once, cancelled = \(waitingOne.isCancelled)")

        print("cancel one that runs: \(running[0].name)")
        running[0].cancel()
        await running[0].waitUntilFinished()
        print("  \(running[0].name): its main saw isCancelled and stopped")

        print("cancel all the others: queue.cancelAllOperations()")
        queue.cancelAllOperations()
        await queue.waitUntilAllOperationsAreFinished()

        var ranAtAll: [String] = []
        for job in jobs {
            do {
                _ = try await job.value
                print("  \(job.name): finished its work?"); exit(1)
            } catch RemoteOperationError.cancelled(let reason) {
                let ran = job.lastRun.worker.isEmpty ? "never ran" : "ran on \(job.lastRun.worker)"
                if !job.lastRun.worker.isEmpty { ranAtAll.append(job.name) }
                print("  \(job.name): cancelled (\(reason)), \(ran)")
            }
        }
        let took = ContinuousClock.now - start
        print("\(jobs.count) jobs cancelled, \(ranAtAll.count) had started; the whole run took \(String(format: "%.2f", Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)) s")
        guard took < .seconds(5) else { print("a cancel did not stop a running job"); exit(1) }
        guard !ranAtAll.contains(waitingOne.name) else { print("\(waitingOne.name) ran although cancelled while waiting"); exit(1) }
        coordinator.close()
    }
}
