// swift-tools-version: 6.2
import PackageDescription

// Rule numbers in comments (S1–S17, A1–A10) are those of docs/SEMANTICS.md, the behaviour contract.
// Layers (dependencies point down only; see docs/ARCHITECTURE.md):
//   executables  opcoord, opworker, opctl, opbench, oploadtest
//   shells       Coordinator (+ Journal, its state on disk; HTTPFront, its read-only web side), WorkerAgent, OpClient
//   runtime      WorkerRuntime, OpSpec
//   wire         WireProtocol (protobuf), ZeroMQ (over CZeroMQ)
//   core         SchedulerCore (pure, no I/O)
// The core's simulation tests validate the whole state after every step; optimising the core and its
// tests in debug builds keeps `swift test` to seconds. (Unsafe flags are allowed because SchedulerCore
// is not part of any library product another package would depend on.)
let optimiseInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

var targets: [Target] = [
    // Core: the pure scheduling state machine.
    .target(name: "SchedulerCore", dependencies: [
        .product(name: "HeapModule", package: "swift-collections"),
        .product(name: "DequeModule", package: "swift-collections"),
    ], swiftSettings: optimiseInDebug),

    // Transport: libzmq and its one Swift wrapper.
    .systemLibrary(name: "CZeroMQ", pkgConfig: "libzmq", providers: [.apt(["libzmq3-dev"])]),
    .target(name: "ZeroMQ", dependencies: ["CZeroMQ"]),

    // Protocol: schema, generated code, framing.
    .target(name: "WireProtocol", dependencies: [
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
    ], exclude: ["Schema"]),

    // Specs and the worker's runtime.
    .target(name: "OpSpec", dependencies: [.product(name: "Yams", package: "Yams")]),
    .target(name: "WorkerRuntime", dependencies: [
        "OpSpec",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Subprocess", package: "swift-subprocess"),
    ]),

    // Shells: frames in, core events; core actions, frames out.
    .target(name: "Coordinator", dependencies: [
        "SchedulerCore", "WireProtocol", "ZeroMQ", "Journal",
        .product(name: "Logging", package: "swift-log"),
    ]),
    .target(name: "WorkerAgent", dependencies: [
        "WorkerRuntime", "WireProtocol", "ZeroMQ", "OpSpec", "OpClient",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "DequeModule", package: "swift-collections"),
    ]),
    .target(name: "OpClient", dependencies: ["WireProtocol", "ZeroMQ", "OpSpec"]),
    // The coordinator's HTTP side (docs/HTTP.md): dashboard, JSON read through the loop, /metrics.
    .target(name: "HTTPFront", dependencies: [
        "Coordinator", "OpClient", "WireProtocol", "ZeroMQ", "DashboardPage",
        .product(name: "FlyingFox", package: "FlyingFox"),
        .product(name: "FlyingSocks", package: "FlyingFox"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        .product(name: "Logging", package: "swift-log"),
    ]),
    // The coordinator's write-ahead journal and snapshots on local disk (A5; format in JournalStore.swift).
    .target(name: "Journal", dependencies: ["SchedulerCore"]),
    // The Swift API (OperationQueue's vocabulary); a library product, so no unsafe flags below it.
    .target(name: "DistributedOperationQueue", dependencies: ["OpClient", "OpSpec", "WireProtocol", "ZeroMQ"]),

    // The dashboard page opcoord serves (docs/HTTP.md): web/ holds its sources, DashboardAssets.swift
    // is generated from them by scripts/gen-dashboard (DashboardPageTests fails while it is out of date).
    .target(name: "DashboardPage", exclude: ["web"]),

    // Executables.
    .executableTarget(name: "opcoord", dependencies: [
        "Coordinator", "HTTPFront",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
    ]),
    .executableTarget(name: "opworker", dependencies: [
        "WorkerAgent", "WorkerRuntime",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
    ]),
    .executableTarget(name: "opctl", dependencies: [
        "OpClient", "OpSpec", "WireProtocol", "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
    ]),

    // Benchmarks (scripts/bench).
    .executableTarget(name: "opbench", dependencies: [
        "SchedulerCore", "ZeroMQ", "WireProtocol", "WorkerRuntime", "OpSpec", "OpClient",
        .product(name: "DequeModule", package: "swift-collections"),
    ]),

    // Load tests against a running cluster, and many simulated workers in one process (scripts/loadtest).
    .executableTarget(name: "oploadtest", dependencies: [
        "OpClient", "OpSpec", "WireProtocol", "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "HeapModule", package: "swift-collections"),
        .product(name: "Histogram", package: "hdrhistogram-swift"),
    ]),

    // The Swift API against Foundation's OperationQueue (`scripts/bench api`, docs/BENCHMARKS.md).
    .executableTarget(name: "apibench", dependencies: ["DistributedOperationQueue"]),

    // examples/ImagePipeline: a worker with `download` and `sepia` handlers, and a client.
    .executableTarget(name: "imagepipeline-worker", dependencies: [
        "WorkerAgent", "WorkerRuntime",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
    ], path: "examples/ImagePipeline/Worker"),
    .executableTarget(name: "imagepipeline", dependencies: ["DistributedOperationQueue"], path: "examples/ImagePipeline/Client"),

    // Tests.
    .testTarget(name: "SchedulerCoreTests", dependencies: ["SchedulerCore"], swiftSettings: optimiseInDebug),
    .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ"]),
    .testTarget(name: "WireProtocolTests", dependencies: ["WireProtocol"]),
    .testTarget(name: "OpSpecTests", dependencies: ["OpSpec"]),
    .testTarget(name: "WorkerRuntimeTests", dependencies: ["WorkerRuntime", "OpSpec"]),
    // The coordinator shell's pure values (clock conversion, log limiting, the durability gate), without sockets.
    .testTarget(name: "CoordinatorTests", dependencies: ["Coordinator"]),
    // The worker shell's pure values (what it holds across sessions), without sockets.
    .testTarget(name: "WorkerAgentTests", dependencies: [
        "WorkerAgent", "WorkerRuntime", "WireProtocol", "ZeroMQ",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
    ]),
    // The generated dashboard assets match Sources/DashboardPage/web/ and load nothing from elsewhere.
    .testTarget(name: "DashboardPageTests", dependencies: ["DashboardPage"]),
    // The journal's codec, on-disk format, recovery rules and writer (temporary directories; tmpfs as root).
    .testTarget(name: "JournalTests", dependencies: ["Journal", "SchedulerCore"]),
    // Real opcoord/opworker/opctl processes over loopback; they must be built first (scripts/test does).
    // Starts real opcoord/opworker processes for the two process-level test targets below.
    .target(name: "ClusterTestSupport", dependencies: ["OpClient", "WireProtocol", "ZeroMQ"], path: "Tests/ClusterTestSupport"),
    .testTarget(name: "IntegrationTests", dependencies: ["ClusterTestSupport", "OpClient", "WireProtocol", "ZeroMQ"]),
    // TestOperationQueue.swift's behaviours against RemoteOperationQueue on real processes.
    .testTarget(name: "CompatibilityTests", dependencies: ["ClusterTestSupport", "DistributedOperationQueue", "OpClient", "WireProtocol"]),
]

let package = Package(
    name: "opqueue",
    products: [
        .executable(name: "opcoord", targets: ["opcoord"]),
        .executable(name: "opworker", targets: ["opworker"]),
        .executable(name: "opctl", targets: ["opctl"]),
        .library(name: "DistributedOperationQueue", targets: ["DistributedOperationQueue"]),
        // For custom worker executables (docs/HANDLERS.md, "Worker entry point").
        .library(name: "OpQueueWorker", targets: ["WorkerAgent", "WorkerRuntime"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: targets
)

// The libFuzzer target links with -sanitize=fuzzer, which a normal build cannot,
// so it exists only when scripts/fuzz asks for it (OPQUEUE_FUZZ=1).
if Context.environment["OPQUEUE_FUZZ"] == "1" {
    package.targets.append(
        .executableTarget(name: "ProtocolFuzz", dependencies: ["WireProtocol"], path: "Tests/Fuzz/ProtocolFuzz")
    )
}
