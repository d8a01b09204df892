import DistributedOperationQueue
import Foundation

/// The photo list of Apple's Operation Queues tutorials, distributed: every row needs a `download` and a `sepia` filter that
/// depends on it. The rows on screen get high priority; when the user scrolls, the rows that left the
/// screen are cancelled (work no longer needed) and the new ones are raised. The queues are suspended
/// while a screenful is set up, then resumed.
///
/// Usage: imagepipeline [--coordinator tcp://HOST:PORT] [--dir DIR] [--rows N]
@main
struct ImagePipeline {
    static func main() async throws {
        var endpoint: String?            // nil: $OPCOORD or the local default (RemoteCoordinator's default)
        var dir = NSTemporaryDirectory() + "imagepipeline"
        var rows = 24
        var args = CommandLine.arguments.dropFirst().makeIterator()
        while let a = args.next() {
            switch a {
            case "--coordinator": endpoint = args.next() ?? endpoint
            case "--dir": dir = args.next() ?? dir
            case "--rows": rows = Int(args.next() ?? "") ?? rows
            default: print("usage: imagepipeline [--coordinator ENDPOINT] [--dir DIR] [--rows N]"); exit(2)
            }
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)

        let coordinator = try endpoint.map { try RemoteCoordinator(endpoint: $0) } ?? RemoteCoordinator()
        let downloads = RemoteOperationQueue(name: "downloads", coordinator: coordinator)
        let filters = RemoteOperationQueue(name: "filters", coordinator: coordinator)
        downloads.maxConcurrentOperationCount = 4
        filters.maxConcurrentOperationCount = 2

        // Set up the whole list while nothing may start, so the priorities decide what goes first.
        downloads.isSuspended = true
        filters.isSuspended = true
        var fetch: [RemoteOperation] = [], sepia: [RemoteOperation] = []
        for row in 0..<rows {
            let d = RemoteOperation(kind: "download", payload: Array("\(dir)/photo\(row).ppm \(row)".utf8),
                                    name: "download \(row)", queuePriority: .low, retries: 1)
            let f = RemoteOperation(kind: "sepia", payload: Array("\(dir)/photo\(row)-sepia.ppm".utf8),
                                    name: "sepia \(row)", queuePriority: .low, dependencyPolicy: .succeeded)
            try f.addDependency(d)
            f.completionBlock = { print("  finished \(f.name): \(describe(f.outcome))") }
            fetch.append(d)
            sepia.append(f)
        }
        try await downloads.addOperations(fetch, waitUntilFinished: false)
        try await filters.addOperations(sepia, waitUntilFinished: false)

        let screen = 6
        func show(_ visible: Range<Int>) {
            for row in visible where row < rows {
                fetch[row].queuePriority = .veryHigh
                sepia[row].queuePriority = .veryHigh
            }
        }
        print("screen shows rows 0..<\(screen): raised to veryHigh; resuming the queues")
        show(0..<screen)
        downloads.isSuspended = false
        filters.isSuspended = false

        // The user scrolls after a moment: rows 0..<6 are done or nearly; the user jumps to the end of the list.
        try await Task.sleep(for: .milliseconds(1200))
        let target = max(0, rows - screen)..<rows
        print("user scrolled to rows \(target.lowerBound)..<\(target.upperBound): cancelling unfinished work for the rows in between")
        for row in screen..<max(screen, target.lowerBound) where !sepia[row].isFinished {
            sepia[row].cancel()
            if !fetch[row].isFinished { fetch[row].cancel() }
        }
        show(target)

        await downloads.waitUntilAllOperationsAreFinished()
        await filters.waitUntilAllOperationsAreFinished()

        print("\nrow  download                 sepia")
        var done = 0, cancelled = 0
        for row in 0..<rows {
            if sepia[row].outcome?.isSucceeded == true { done += 1 }
            if sepia[row].isCancelled { cancelled += 1 }
            print(String(format: "%3d  %@ %@", row, describe(fetch[row].outcome).padding(toLength: 24, withPad: " ", startingAt: 0),
                         describe(sepia[row].outcome)))
        }
        print("\n\(done) filtered, \(cancelled) cancelled; outputs in \(dir)")
        coordinator.close()
    }

    static func describe(_ o: OperationOutcome?) -> String {
        switch o {
        case .succeeded(let bytes)?: "ok " + (String(decoding: bytes, as: UTF8.self).split(separator: "/").last.map(String.init) ?? "")
        case .failed(let t)?: "failed: \(t)"
        case .cancelled(let r)?: "cancelled (\(r))"
        case nil: "-"
        }
    }
}
