// example-worker: `opworker` (its whole command line: --connect, --slots, --name, --tags, …) plus the
// kinds of the examples' operations. A worker of your own is this one line with your types
// (examples/WorkerTemplate is a package to copy).
import DistributedOperationWorker
import ExampleOperations

try await OpWorker.main(operations: [
    Download.self, Sepia.self, Blur.self, Thumbnail.self,      // ImagePipeline, FilterChain, ScrollingPriorities
    FetchPhotoList.self,                                      // AsyncOperation
    Work.self, SquareRoots.self,                              // Cancellation, WaitUntilFinished, CompletionBlock
])
