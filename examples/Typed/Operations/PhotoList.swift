import DistributedOperationQueue
import Dispatch
import Synchronization

/// One row of the photo list: the tutorial's `PhotoRecord` without the picture (the picture is a
/// `Download`'s output).
public struct PhotoRecord: Codable, Sendable, Equatable {
    public var name: String
    public var url: String
}

/// Fetches the list of photos: the tutorial's first step (a plist of names and URLs, fetched with
/// AFNetworking's `AFHTTPRequestOperation`), and the guide's "concurrent operation".
///
/// The work runs elsewhere: `PhotoListRequest` is a callback-style client (like AFNetworking's) that
/// returns at once and calls back from its own dispatch queue. In Foundation, such an operation must
/// override `start()`, keep `isExecuting` true itself and set `isFinished` from the callback, or it
/// finishes before its work has (the seeds' `StrangeAsyncOperation`). Here `main` is `async`: it
/// suspends until the callback resumes it, so the operation stays executing until the work is done,
/// and a cancel reaches the request through `context.onCancel`.
public struct FetchPhotoList: DistributedOperation {
    public var count: Int
    public var pages: Int
    public var pageDelayMs: Int

    public init(count: Int, pages: Int = 4, pageDelayMs: Int = 100) {
        (self.count, self.pages, self.pageDelayMs) = (count, max(1, pages), pageDelayMs)
    }

    public func main(_ context: OperationContext) async throws -> [PhotoRecord] {
        let request = PhotoListRequest(count: count, pages: pages, pageDelayMs: pageDelayMs)
        context.onCancel { _ in request.cancel() }           // a cancel of the operation stops the request
        return try await withCheckedThrowingContinuation { continuation in
            request.start(progress: { context.reportProgress($0, message: "page \(Int($0 * Double(pages))) of \(pages)") },
                          completion: { continuation.resume(with: $0) })
        }
    }
}

/// A callback-style client standing in for a network library: `start` returns at once; pages
/// "arrive" on its own dispatch queue every `pageDelayMs`; `completion` is called exactly once.
public final class PhotoListRequest: Sendable {
    let count: Int, pages: Int, pageDelayMs: Int
    private let cancelled = Atomic<Bool>(false)
    private let queue = DispatchQueue(label: "example.photo-list")

    public init(count: Int, pages: Int, pageDelayMs: Int) {
        (self.count, self.pages, self.pageDelayMs) = (count, pages, pageDelayMs)
    }

    public func start(progress: @escaping @Sendable (Double) -> Void,
                      completion: @escaping @Sendable (Result<[PhotoRecord], any Error>) -> Void) {
        queue.async { self.receive(page: 0, records: [], progress: progress, completion: completion) }
    }

    public func cancel() { cancelled.store(true, ordering: .relaxed) }

    private func receive(page: Int, records: [PhotoRecord], progress: @escaping @Sendable (Double) -> Void,
                         completion: @escaping @Sendable (Result<[PhotoRecord], any Error>) -> Void) {
        if cancelled.load(ordering: .relaxed) { return completion(.failure(CancellationError())) }
        if page == pages { return completion(.success(records)) }
        queue.asyncAfter(deadline: .now() + .milliseconds(pageDelayMs)) {
            let range = (page * self.count / self.pages)..<((page + 1) * self.count / self.pages)
            let more = range.map { PhotoRecord(name: "photo \($0)", url: "photo://\($0)") }
            progress(Double(page + 1) / Double(self.pages))
            self.receive(page: page + 1, records: records + more, progress: progress, completion: completion)
        }
    }
}
