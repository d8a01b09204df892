import DistributedOperationQueue
import Foundation

/// "Downloads" the photo at `url`: the tutorial's `ImageDownloader`. Its stored properties are its
/// inputs (an operation is a Codable value); `main` runs on a worker and returns the picture.
///
/// There is no network in the examples: it waits `latencyMs` (cancellably: a cancel ends the wait at
/// once) and draws a picture from the number at the end of the URL. A URL with "missing" in it fails
/// with `DownloadError.notFound`, which the client catches as that type.
public struct Download: DistributedOperation {
    public var url: String
    public var latencyMs: Int
    public var side: Int

    public init(url: String, latencyMs: Int = 60, side: Int = 96) {
        (self.url, self.latencyMs, self.side) = (url, latencyMs, side)
    }

    public typealias Failure = DownloadError

    public func main(_ context: OperationContext) async throws -> Image {
        try await Task.sleep(for: .milliseconds(latencyMs))     // the fetch; Task.sleep ends at once when cancelled
        guard !url.contains("missing") else { throw DownloadError.notFound(url: url) }
        let seed = Int(url.reversed().prefix { $0.isNumber }.reversed().map(String.init).joined()) ?? url.count
        return Image.gradient(seed: seed, width: side, height: side * 2 / 3)
    }
}

/// Why a download failed. `Codable`, so the client catches it as itself (`catch let e as DownloadError`).
public enum DownloadError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    case notFound(url: String)

    public var description: String {
        switch self {
        case .notFound(let url): "no photo at \(url)"
        }
    }
}
