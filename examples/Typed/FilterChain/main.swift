// Dependencies that pass results: the tutorial's download → filter chain for one photo.
//
// Each stage is an operation value; `addDependency` orders them, and each stage's `main` (on a
// worker) reads the picture its dependency returned with `context.output(of:)`. The stages may run
// on different workers: the coordinator hands each one its dependency's output.
//
// Usage: example-filter-chain [PHOTO-URL]   (coordinator: $OPCOORD, else tcp://127.0.0.1:7600)
import DistributedOperationQueue
import ExampleOperations
import Foundation

let url = CommandLine.arguments.dropFirst().first ?? "photo://7"
let coordinator = try await RemoteCoordinator.connect()
let queue = RemoteOperationQueue(name: "filter-chain", coordinator: coordinator)

let download = TypedRemoteOperation(Download(url: url), name: "download")
// `.succeeded`: a stage runs only when its dependency succeeded; a failed download cancels the rest of
// the chain (the default, OperationQueue's rule, runs a stage once its dependency finished at all).
let sepia = TypedRemoteOperation(Sepia(), name: "sepia", dependencyPolicy: .succeeded)
let blur = TypedRemoteOperation(Blur(radius: 2), name: "blur", dependencyPolicy: .succeeded)
let thumbnail = TypedRemoteOperation(Thumbnail(side: 24), name: "thumbnail", dependencyPolicy: .succeeded)
try sepia.addDependency(download)
try blur.addDependency(sepia)
try thumbnail.addDependency(blur)

// Added in any order: each one waits for its dependency.
try await queue.addOperations([thumbnail, blur, sepia, download])

let icon = try await thumbnail.value                    // an `Image`, decoded: no bytes in sight
let original = try await download.value
print("downloaded \(url): \(original.width)×\(original.height)")
let blurred = try await blur.value
print("sepia → blur (\(blurred.width)×\(blurred.height)) → thumbnail: \(icon.width)×\(icon.height)")
guard icon.width == 24, icon.height == 24 * original.height / original.width else {
    print("unexpected thumbnail size \(icon.width)×\(icon.height)"); exit(1)
}
let file = FileManager.default.temporaryDirectory.appendingPathComponent("filter-chain-thumbnail.ppm")
try icon.ppm.write(to: file)
print("thumbnail written to \(file.path)")
print("ran on: " + ([download, sepia, blur, thumbnail] as [RemoteOperation]).map { "\($0.name)@\($0.lastRun.worker)" }.joined(separator: ", "))
coordinator.close()
