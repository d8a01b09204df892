import Foundation

// Child programs of the benchmarks (the C floor, the peers' Python script): bounded in time, killed by PID
// on overrun, registered with `E2EChildren` so a Ctrl-C of opbench takes them down too.

/// Runs a program to completion (killed after `timeout` s) and parses its `key=value` output.
func runKeyValues(_ path: String, _ args: [String], timeout: Double) -> [String: Double]? {
    guard let text = runCapture(path, args, timeout: timeout) else { return nil }
    var fields: [String: Double] = [:]
    for pair in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
        let kv = pair.split(separator: "=", maxSplits: 1)
        if kv.count == 2, let v = Double(kv[1]) { fields[String(kv[0])] = v }
    }
    return fields
}

/// Runs a program and parses each stdout line that is a JSON object; stderr passes through.
func runLines(_ path: String, _ args: [String], timeout: Double) -> [[String: Any]] {
    guard let text = runCapture(path, args, timeout: timeout, passStderr: true) else { return [] }
    return text.split(separator: "\n").compactMap {
        (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
    }
}

/// Stdout of a program that exited 0 within `timeout` seconds (else it is killed by PID and nil returned).
func runCapture(_ path: String, _ args: [String], timeout: Double, passStderr: Bool = false) -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    if !passStderr { p.standardError = FileHandle.nullDevice }
    do { try p.run() } catch { return nil }
    E2EChildren.add(p.processIdentifier)
    defer { E2EChildren.remove(p.processIdentifier) }
    // Read on another thread so a chatty child never blocks on a full pipe while we time it.
    let box = DataBox()
    let reader = Thread { box.data = out.fileHandleForReading.readDataToEndOfFile(); box.done.signal() }
    reader.start()
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(20_000) }
    if p.isRunning {
        FileHandle.standardError.write(Data("opbench: \(URL(fileURLWithPath: path).lastPathComponent) \(args.first ?? "") killed after \(Int(timeout)) s\n".utf8))
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }
    box.done.wait()
    let text = String(decoding: box.data, as: UTF8.self)
    return p.terminationStatus == 0 || passStderr ? text : nil
}

private final class DataBox: @unchecked Sendable {
    var data = Data()
    let done = DispatchSemaphore(value: 0)
}
