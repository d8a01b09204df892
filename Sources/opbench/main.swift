// opbench SUITE [--json] [--quick] — see scripts/bench, which builds it in release mode and passes
// the C floor program's path in $OPQ_ZMQ_FLOOR for the wire suite.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let json = arguments.contains("--json")
let quick = arguments.contains("--quick")
let suites = ["core", "wire", "worker", "all"]
guard let suite = arguments.first, suites.contains(suite) else {
    FileHandle.standardError.write(Data("usage: opbench \(suites.joined(separator: "|")) [--json] [--quick]\n".utf8))
    exit(2)
}
if suite == "core" || suite == "all" {
    BenchReport.emit(runCoreBench(json: json, quick: quick), json: json)
}
if suite == "wire" || suite == "all" {
    BenchReport.emit(runCodecBench(json: json, quick: quick), json: json)
    let floor = ProcessInfo.processInfo.environment["OPQ_ZMQ_FLOOR"]
    BenchReport.emit(runStreamBench(json: json, quick: quick, floorBinary: floor), json: json)
}
if suite == "worker" || suite == "all" {
    await runWorkerBench(json: json)
}
