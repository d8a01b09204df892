import DistributedOperationQueue
import ExampleOperations
import Foundation

/// The photo list of the NSOperation tutorials, distributed, with typed operations: every row of the
/// table needs its photo downloaded, then filtered (sepia, then blur) and scaled to a thumbnail. Each
/// stage is an operation value (ExampleOperations: `Download`, `Sepia`, `Blur`, `Thumbnail`) that
/// reads its dependency's output with `context.output(of:)` on the worker; this client never touches
/// a byte of it.
///
/// As in the tutorial: two queues (downloads, filters); the table is set up while they are suspended;
/// the rows on screen go first (`.veryHigh`); a photo that cannot be downloaded shows "failed to load"
/// (its download throws `DownloadError`, caught here as that type; its filters are cancelled, since
/// they need a photo: `dependencyPolicy: .succeeded`); when the user scrolls to the end of the list,
/// the unfinished work of the rows scrolled past is cancelled and the new screen is raised. A
/// completion block "updates the cell" as each thumbnail arrives.
///
/// Usage: imagepipeline [--rows N] [--dir DIR]   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
@main
struct ImagePipeline {
    /// The operations of one table row.
    struct Row {
        let download: TypedRemoteOperation<Download>
        let sepia: TypedRemoteOperation<Sepia>
        let blur: TypedRemoteOperation<Blur>
        let thumbnail: TypedRemoteOperation<Thumbnail>
        var all: [RemoteOperation] { [download, sepia, blur, thumbnail] }
        var filters: [RemoteOperation] { [sepia, blur, thumbnail] }
    }

    static func main() async throws {
        var rows = 24, dir = NSTemporaryDirectory() + "imagepipeline"
        var args = CommandLine.arguments.dropFirst().makeIterator()
        while let a = args.next() {
            switch a {
            case "--rows": rows = Int(args.next() ?? "").map { max(8, $0) } ?? rows
            case "--dir": dir = args.next() ?? dir
            default: print("usage: imagepipeline [--rows N (at least 8)] [--dir DIR]"); exit(2)
            }
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let screen = 6, missing = 3                        // row 3's photo is not there

        let coordinator = try await RemoteCoordinator.connect()
        let downloads = RemoteOperationQueue(name: "downloads", coordinator: coordinator)
        let filters = RemoteOperationQueue(name: "filters", coordinator: coordinator)
        try downloads.setMaxConcurrentOperationCount(4)
        try filters.setMaxConcurrentOperationCount(2)
        try downloads.setSuspended(true)                   // set the whole table up while nothing may start
        try filters.setSuspended(true)

        let (cells, cellUpdated) = AsyncStream.makeStream(of: Int.self)
        var table: [Row] = []
        for row in 0..<rows {
            let url = row == missing ? "photo://missing-\(row)" : "photo://\(row)"
            let r = Row(download: TypedRemoteOperation(Download(url: url, latencyMs: 60 + row % 5 * 20), name: "download \(row)",
                                                       queuePriority: .low),
                        sepia: TypedRemoteOperation(Sepia(), name: "sepia \(row)", queuePriority: .low, dependencyPolicy: .succeeded),
                        blur: TypedRemoteOperation(Blur(), name: "blur \(row)", queuePriority: .low, dependencyPolicy: .succeeded),
                        thumbnail: TypedRemoteOperation(Thumbnail(), name: "thumbnail \(row)", queuePriority: .low,
                                                        dependencyPolicy: .succeeded))
            try r.sepia.addDependency(r.download)
            try r.blur.addDependency(r.sepia)
            try r.thumbnail.addDependency(r.blur)
            r.thumbnail.completionBlock = { cellUpdated.yield(row) }     // "reload the row"
            table.append(r)
        }
        try await downloads.addOperations(table.map(\.download))
        try await filters.addOperations(table.flatMap(\.filters))

        func show(_ visible: Range<Int>) {
            for row in visible where row < rows {
                for op in table[row].all { op.queuePriority = .veryHigh }
            }
        }
        print("screen shows rows 0..<\(screen): raised to veryHigh; resuming the queues")
        show(0..<screen)
        try downloads.setSuspended(false)
        try filters.setSuspended(false)

        // Cells are updated as thumbnails arrive; once the first screenful is done, the user jumps to
        // the end of the list: the rows in between are no longer needed.
        let target = (rows - screen)..<rows
        var updated = 0
        for await row in cells {
            updated += 1
            print("  row \(row): \(describe(table[row].thumbnail.outcome))")
            if updated == screen {
                print("user scrolled to rows \(target): cancelling unfinished work for the rows in between")
                for row in screen..<target.lowerBound {
                    for op in table[row].all where !op.isFinished { op.cancel() }
                }
                show(target)
            }
            if updated == rows { break }
        }
        await downloads.waitUntilAllOperationsAreFinished()
        await filters.waitUntilAllOperationsAreFinished()

        // The table: each row's picture, or why it has none. `value` is the decoded output, or throws
        // the operation's own error type, or `RemoteOperationError` (cancelled, failed…).
        print("\nrow  " + "photo".padding(toLength: 48, withPad: " ", startingAt: 0) + " thumbnail")
        var done = 0, cancelled = 0, failed = 0
        for (row, r) in table.enumerated() {
            var photo: String, thumb: String
            do {
                let image = try await r.download.value
                photo = "\(image.width)×\(image.height)"
            } catch let e as DownloadError {
                photo = "failed to load (\(e))"
            } catch RemoteOperationError.cancelled {
                photo = "cancelled"
            }
            do {
                let icon = try await r.thumbnail.value
                try icon.ppm.write(to: URL(fileURLWithPath: "\(dir)/photo\(row)-thumbnail.ppm"))
                thumb = "photo\(row)-thumbnail.ppm"
                done += 1
            } catch RemoteOperationError.cancelled(let reason) {
                thumb = "cancelled (\(reason))"
                if row == missing { failed += 1 } else { cancelled += 1 }
            }
            print(String(format: "%3d  %@ %@", row, photo.padding(toLength: 48, withPad: " ", startingAt: 0), thumb))
        }
        print("\n\(done) thumbnails, \(cancelled) cancelled, \(failed) failed to load; thumbnails in \(dir)")
        guard done + cancelled + failed == rows, failed == 1, done >= 2 * screen - 1 else { exit(1) }
        coordinator.close()
    }

    static func describe(_ outcome: OperationOutcome?) -> String {
        switch outcome {
        case .succeeded?: "thumbnail ready"
        case .failed(let text)?: "failed: \(text)"
        case .cancelled(let reason)?: "cancelled (\(reason))"
        case nil: "-"
        }
    }
}
