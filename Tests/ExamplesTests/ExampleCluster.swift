import ClusterTestSupport
import Foundation

/// A coordinator and two `example-worker`s (opworker plus the examples' operation kinds) as real
/// processes on loopback; `run` starts an example client against them ($OPCOORD) and waits, bounded,
/// for it to exit.
final class ExampleCluster {
    let local: LocalCluster
    private var workers: [Process] = []

    init(workers count: Int = 2) throws {
        local = try LocalCluster(heartbeatMs: 200)
        do {
            for i in 0..<count {
                let name = "example-\(i)"
                workers.append(try LocalCluster.launch("example-worker",
                    ["--connect", local.endpoint, "--name", name, "--slots", "2", "--prefetch", "0"],
                    log: local.dir.appendingPathComponent("\(name).log")))
            }
            try local.waitUntil("\(count) example workers registered", timeout: 20) {
                try local.workerList().filter { $0.name.hasPrefix("example-") }.count == count
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// What an example client printed, and how it exited.
    struct Run {
        var status: Int32
        var output: String
    }

    /// Runs example client `executable` with `arguments`; after `timeout` seconds it is killed and the
    /// wait throws (with the cluster's logs).
    func run(_ executable: String, _ arguments: [String] = [], timeout: Double = 60) throws -> Run {
        let log = local.dir.appendingPathComponent("\(executable).out")
        let client = try LocalCluster.launch(executable, arguments, log: log, env: ["OPCOORD": local.endpoint])
        do {
            try local.waitUntil("\(executable) to exit", timeout: timeout) { !client.isRunning }
        } catch {
            kill(client.processIdentifier, SIGKILL)
            client.waitUntilExit()
            throw ClusterError("\(error)\n--- \(executable)'s output\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        client.waitUntilExit()
        return Run(status: client.terminationStatus, output: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    func logs() -> String { local.logs() }

    /// Ends the example workers (SIGTERM, SIGKILL after 5 s), then the cluster.
    func stop() {
        for w in workers where w.isRunning { kill(w.processIdentifier, SIGTERM) }
        for w in workers {
            if (try? waitUntil("example worker to stop", timeout: 5, interval: .milliseconds(10)) { !w.isRunning }) == nil {
                kill(w.processIdentifier, SIGKILL)
                w.waitUntilExit()
            }
        }
        workers = []
        local.stop()
    }
}
