// opbench SUITE [--json] [--quick] [--peers] — see scripts/bench, which builds it in release mode and passes
// the C floor program's path in $OPQ_ZMQ_FLOOR for the wire and e2e suites (e2e: --peers adds Dask/Ray).
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let json = arguments.contains("--json")
let quick = arguments.contains("--quick")
let peers = arguments.contains("--peers")
let suites = ["core", "wire", "worker", "e2e", "history", "recovery", "slow-readers", "loop", "retain-bytes", "all"]
guard let suite = arguments.first, suites.contains(suite) else {
    FileHandle.standardError.write(Data("usage: opbench \(suites.joined(separator: "|")) [--json] [--quick] [--peers]\n".utf8))
    exit(2)
}
if suite == "core" || suite == "all" {
    BenchReport.emit(runCoreBench(json: json, quick: quick), json: json)
}
if suite == "wire" || suite == "all" {
    BenchReport.emit(runCodecBench(quick: quick), json: json)
    let floor = ProcessInfo.processInfo.environment["OPQ_ZMQ_FLOOR"]
    BenchReport.emit(runStreamBench(json: json, quick: quick, floorBinary: floor), json: json)
}
if suite == "worker" || suite == "all" {
    await runWorkerBench(json: json)
}
// Not part of `all`: it starts a coordinator and workers as processes and takes minutes.
if suite == "e2e" {
    BenchReport.emit(runE2EBench(quick: quick, peers: peers), json: json)
}
// Not part of `all` either: a long-lived coordinator's memory under many runs and many clients.
if suite == "history" {
    BenchReport.emit(runHistoryBench(quick: quick), json: json)
}
// Not part of `all`: a coordinator killed with a million live operations in its journal.
if suite == "recovery" {
    BenchReport.emit(runRecoveryBench(quick: quick), json: json)
}
// Not part of `all`: thousands of clients that never read, and a well-behaved one beside them.
if suite == "slow-readers" {
    BenchReport.emit(runSlowReadersBench(quick: quick), json: json)
}
// Not part of `all`: finished runs with 1 MiB results under --retain-bytes 256MiB (RSS against the budget).
if suite == "retain-bytes" {
    BenchReport.emit(runRetainBytesBench(quick: quick), json: json)
}
// Not part of `all`: simulated workers beside a large submit, the loop's longest pass and heartbeat gaps.
if suite == "loop" {
    BenchReport.emit(runLoopBench(quick: quick), json: json)
}
