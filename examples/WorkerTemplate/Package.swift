// swift-tools-version: 6.2
// A worker of your own: copy this directory, rename what you like, and point the dependency below at
// your checkout of opqueue. (Not built by opqueue's CI, which would build opqueue twice; the example
// worker examples/Typed/Worker is the same one line and is built and run there.)
import PackageDescription

let package = Package(
    name: "MyWorker",
    products: [
        // Your operations, for your client programs (another package) as well as for this worker.
        .library(name: "MyOperations", targets: ["MyOperations"]),
        .executable(name: "my-worker", targets: ["my-worker"]),
    ],
    dependencies: [
        // Where your checkout of opqueue is (this template sits two levels below its root).
        .package(name: "opqueue", path: "../.."),
    ],
    targets: [
        // The operation types: shared by the worker (which runs them) and the clients (which add them).
        .target(name: "MyOperations", dependencies: [.product(name: "DistributedOperationQueue", package: "opqueue")]),
        // The worker: `opworker` plus your operations, in one line.
        .executableTarget(name: "my-worker", dependencies: [
            "MyOperations", .product(name: "DistributedOperationWorker", package: "opqueue"),
        ]),
        // A client that adds one of them and prints its result.
        .executableTarget(name: "my-client", dependencies: [
            "MyOperations", .product(name: "DistributedOperationQueue", package: "opqueue"),
        ]),
    ]
)
