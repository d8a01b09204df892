import ArgumentParser
import Foundation
import OpClient
import OpSpec
import WireProtocol
import ZeroMQ

@main
struct OpLoadTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oploadtest",
        abstract: "Load tests against an opqueue coordinator, and many simulated workers from one process.",
        discussion: """
            scripts/loadtest starts clusters (loopback, network namespaces, or prints the commands for \
            remote machines) and calls this. Exit status: 0 every check passed; 1 a check failed; \
            3 the coordinator could not be reached or refused a request; 64 bad arguments.
            """,
        subcommands: [Run.self, SimWorkers.self, Stats.self])
}

extension OpLoadTest {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run one workload, print a summary and optionally write it as JSON.",
            discussion: "Workloads: " + Workload.allCases.map(\.rawValue).joined(separator: ", ") + ".")

        @Option(help: "Coordinator endpoint (default: $OPCOORD or tcp://127.0.0.1:7600).")
        var coordinator: String?
        @Option(help: "The workload.")
        var workload: String
        @Option(help: "Operations (for priority: the backlog; for fan and layered: about this many).")
        var ops: Int = 10_000
        @Option(help: "Width of a layer (layered) or of a fan (fan).")
        var width: Int = 1_000
        @Option(help: "Seed for everything random in the run.")
        var seed: UInt64 = 1
        @Option(help: "Operation kind (default: noop; sleep for priority and cancel; burn for burn).")
        var opKind: String?
        @Option(help: "Milliseconds each sleep/burn op takes (default: 50 priority, 100 cancel, 10 sleep/burn).")
        var opMs: Int?
        @Option(help: "Give up after this many seconds (the coordinator's WAIT is bounded by it).")
        var timeLimit: Double = 300
        @Option(help: "Seconds to wait for each reply of the coordinator (WAIT is bounded by --time-limit instead).")
        var requestTimeout: Double = 30
        @Option(help: "Wait until at least this many workers are registered before starting.")
        var minWorkers: Int = 1
        @Option(help: "Seconds to wait for --min-workers.")
        var workersTimeout: Double = 60
        @Flag(inversion: .prefixedNo, help: "Follow the run on a WATCH stream and check each op finished exactly once (default: on up to 200,000 ops).")
        var watch: Bool?
        @Option(help: "veryHigh probe ops (priority, queued).")
        var probes: Int = 20
        @Option(help: "Fraction of the ops the cancel workload cancels.")
        var cancelFraction: Double = 0.25
        @Option(help: "Record a per-op timeline (Gantt) when the run has at most this many ops.")
        var timelineLimit: Int = 2_000
        @Option(help: "Coordinator RSS in bytes before any worker connected, for the per-worker cost.")
        var baselineRss: UInt64?
        @Option(help: "Label for the report (e.g. 'netns 3×2').")
        var label: String?
        @Option(help: "Series name: runs of one series form a throughput-vs-workers line in the plots.")
        var series: String?
        @Option(help: "Target name for the report: loopback, netns or remote.")
        var target: String?
        @Option(help: "Write the report here as JSON.")
        var json: String?

        func validate() throws {
            guard Workload(rawValue: workload) != nil else {
                throw ValidationError("unknown workload '\(workload)'; one of: \(Workload.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard ops >= 1, ops <= 10_000_000 else { throw ValidationError("--ops must be in 1…10,000,000") }
            guard width >= 1 else { throw ValidationError("--width must be ≥ 1") }
            guard (opMs ?? 0) >= 0 else { throw ValidationError("--op-ms must be ≥ 0") }
            guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be > 0") }
            guard timeLimit > 0, workersTimeout >= 0 else { throw ValidationError("--time-limit must be > 0 and --workers-timeout ≥ 0") }
            guard minWorkers >= 0, probes >= 0, timelineLimit >= 0 else { throw ValidationError("--min-workers, --probes and --timeline-limit must be ≥ 0") }
            guard (0...1).contains(cancelFraction) else { throw ValidationError("--cancel-fraction must be in 0…1") }
            if workload == Workload.chain.rawValue, ops < 2 { throw ValidationError("a chain needs --ops ≥ 2") }
        }

        func run() throws {
            let w = Workload(rawValue: workload)!
            let options = RunOptions(
                endpoint: coordinator ?? CoordinatorConnection.defaultEndpoint, requestTimeout: requestTimeout, workload: w, ops: ops, width: width,
                seed: seed, opKind: opKind ?? w.defaultKind, opMs: opMs ?? w.defaultOpMs, timeLimit: timeLimit,
                minWorkers: minWorkers, workersTimeout: workersTimeout, watch: watch ?? (ops <= 200_000 && w != .queued),
                probes: probes, cancelFraction: cancelFraction, timelineLimit: timelineLimit, baselineRSS: baselineRss,
                label: label, series: series, target: target)
            let report: RunReport
            do {
                report = try Driver(options).run()
            } catch let e as ClientError {
                printError("oploadtest: \(e)")
                throw ExitCode(3)
            } catch let e as LoadTestError {
                printError("oploadtest: \(e)")
                throw ExitCode(3)
            }
            print(report.table())
            if let json {
                try report.json().write(to: URL(fileURLWithPath: json))
            }
            if !report.passed { throw ExitCode(1) }
        }
    }

    struct SimWorkers: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "simworkers",
            abstract: "Connect COUNT simulated workers from this one process (they pretend to run ops; see --help).",
            discussion: """
                Each is a real worker to the coordinator (its own connection, HELLO, credit, heartbeats, \
                FINISHED), but runs nothing: noop/echo/fail finish at once, sleep and burn finish after \
                their milliseconds on a timer. Stops on SIGINT/SIGTERM, saying goodbye for each.
                """)

        @Option(help: "Coordinator endpoint.")
        var connect: String
        @Option(help: "How many workers.")
        var count: Int = 100
        @Option(help: "Slots of each worker.")
        var slots: Int = 1
        @Option(help: "Operations each worker may hold beyond its slots.")
        var prefetch: Int = 4
        @Option(help: "Worker names are PREFIX-0, PREFIX-1, …")
        var namePrefix: String = "sim"
        @Option(help: "Write the number of workers to this file once all are registered.")
        var readyFile: String?
        @Option(help: "Exit after this many seconds.")
        var timeLimit: Double = 3600
        @Option(help: "At the end, write the gaps between the coordinator's messages to each worker (p50, p99, max ms) and the sessions that ended, as JSON, to this file.")
        var gapReport: String?

        func validate() throws {
            guard (1...100_000).contains(count) else { throw ValidationError("--count must be in 1…100,000") }
            guard slots >= 1, prefetch >= 0 else { throw ValidationError("--slots must be ≥ 1 and --prefetch ≥ 0") }
            guard timeLimit > 0 else { throw ValidationError("--time-limit must be > 0") }
        }

        func run() throws {
            // Each simulated worker holds a TCP connection and libzmq's mailbox descriptors.
            _ = try? FileDescriptorLimit.raiseSoftToHard()
            StopSignal.install()
            let sim = try SimulatedWorkers(.init(
                endpoint: connect, count: count, slots: slots, prefetch: prefetch,
                kinds: [BuiltinKind.noop, BuiltinKind.sleep, BuiltinKind.echo, BuiltinKind.fail, BuiltinKind.burn],
                namePrefix: namePrefix, readyFile: readyFile, timeLimitSeconds: timeLimit, gapReport: gapReport))
            try sim.run(shouldStop: StopSignal.requested)
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the coordinator's RSS, CPU time, workers and operation count as JSON.")

        @Option(help: "Coordinator endpoint (default: $OPCOORD or tcp://127.0.0.1:7600).")
        var coordinator: String?

        func run() throws {
            do {
                let conn = try CoordinatorConnection(endpoint: coordinator ?? CoordinatorConnection.defaultEndpoint,
                                                     curve: ClientKeys.resolve(key: nil, coordinatorKey: nil))
                guard case .statusReply(let s) = try conn.request(.status(WireStatus())),
                      case .workersReply(let w) = try conn.request(.workers) else {
                    throw LoadTestError("unexpected reply")
                }
                print("{\"rss_bytes\": \(s.coordinatorRssBytes), \"cpu_us\": \(s.coordinatorCpuUs), \"workers\": \(w.workers.count), \"slots\": \(w.workers.reduce(0) { $0 + Int($1.slots) }), \"total_operations\": \(s.totalOperations), \"fenced\": \(s.fenced)}")
            } catch let e as ClientError {
                printError("oploadtest: \(e)")
                throw ExitCode(3)
            }
        }
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
