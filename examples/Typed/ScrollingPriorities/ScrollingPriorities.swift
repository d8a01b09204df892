import DistributedOperationQueue
import ExampleOperations
import Foundation

/// Priorities that change as rows scroll in and out: the tutorial's `loadImagesForOnscreenCells`.
///
/// A table of 16 photos, each a `Download` in one serial download queue (the tutorial's
/// `downloadQueue.maxConcurrentOperationCount = 1`). The rows on screen are raised to `.veryHigh`. After
/// two photos have arrived the user scrolls: as in the tutorial, the queue is suspended while the
/// table moves (`scrollViewWillBeginDragging`), the rows that left the screen are lowered to `.veryLow`
/// (not cancelled: they may come back), the rows now on screen are raised, and the queue resumes
/// (`scrollViewDidEndDecelerating`). The operations are live — already on the coordinator — when their
/// `queuePriority` changes; the coordinator reorders them.
///
/// Usage: example-scrolling-priorities   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
@main
struct ScrollingPriorities {
    static let rows = 16
    static let firstScreen = 0..<4
    static let secondScreen = 10..<14

    static func main() async throws {
        let coordinator = try await RemoteCoordinator.connect()
        let downloads = RemoteOperationQueue(name: "downloads", coordinator: coordinator)
        try downloads.setMaxConcurrentOperationCount(1)
        try downloads.setSuspended(true)                 // set the table up before anything starts

        // Completion blocks run in the order the operations finished; they hand the row to the loop below.
        let (finishes, finished) = AsyncStream.makeStream(of: Int.self)
        var photos: [TypedRemoteOperation<Download>] = []
        for row in 0..<rows {
            let photo = TypedRemoteOperation(Download(url: "photo://\(row)", latencyMs: 40), name: "row \(row)")
            photo.completionBlock = { finished.yield(row) }
            photos.append(photo)
        }
        try await downloads.addOperations(photos)

        print("screen shows rows \(firstScreen): raised to veryHigh")
        for row in firstScreen { photos[row].queuePriority = .veryHigh }
        try downloads.setSuspended(false)

        var order: [Int] = [], finishedBeforeScroll = 0
        var lowered: [Int] = []
        for await row in finishes {
            order.append(row)
            print("  photo of row \(row) arrived")
            if order.count == 2 {
                print("user scrolls to rows \(secondScreen): suspend, reprioritise, resume")
                try downloads.setSuspended(true)
                finishedBeforeScroll = order.count
                lowered = firstScreen.filter { !order.contains($0) }
                for row in lowered where !photos[row].isFinished { photos[row].queuePriority = .veryLow }   // off screen: later
                for row in secondScreen { photos[row].queuePriority = .veryHigh }
                try downloads.setSuspended(false)
            }
            if order.count == rows { break }
        }

        // What the priorities promise: after the scroll (and any row that was already downloading), the
        // new screen first, in order; then the rows never shown, first come first served; the rows that
        // scrolled away last.
        var after = Array(order.dropFirst(finishedBeforeScroll))
        while let first = after.first, lowered.contains(first) {   // it was already downloading when the user scrolled
            after.removeFirst()
            lowered.removeAll { $0 == first }
        }
        let unseen = (0..<rows).filter { !firstScreen.contains($0) && !secondScreen.contains($0) }
        let expected = Array(secondScreen) + unseen + lowered
        print("order: \(order.map(String.init).joined(separator: " "))")
        guard after == expected else {
            print("after the scroll, expected \(expected), got \(after)")
            exit(1)
        }
        for photo in photos where photo.lastError != nil { print("\(photo.name): \(photo.lastError!)"); exit(1) }
        print("the new screen came first, the rows that scrolled away last")
        coordinator.close()
    }
}
