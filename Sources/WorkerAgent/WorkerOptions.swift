import Lifecycle
import ArgumentParser
import Dispatch
import Foundation
import Logging
import OpClient
import WireProtocol
import WorkerRuntime
import ZeroMQ

/// `opworker`'s command-line options, reusable by custom worker executables (docs/HANDLERS.md).
public struct WorkerOptions: ParsableArguments {
    @Option(help: "Coordinator endpoint, e.g. tcp://head:7600, or the coordinators of one --ha group, e.g. tcp://a:7600,tcp://b:7600 (default: $OPCOORD or tcp://127.0.0.1:7600).")
    public var connect: String?

    @Option(help: "Operations run at once (default: number of cores).")
    public var slots: Int?

    @Option(help: "Worker name shown by 'opctl workers' (default: host:pid).")
    public var name: String?

    @Option(help: "Comma-separated placement tags, e.g. gpu,ssd.")
    public var tags: String?

    @Option(help: "Extra operations accepted beyond --slots, waiting locally by priority (default: = slots).")
    public var prefetch: Int?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    public var logLevel: String = "info"

    @Option(help: "This worker's secret key file, for a coordinator with keys (default: $OPQ_KEY; make one with 'opctl keys new').")
    public var key: String?

    @Option(help: "The coordinator's public key, or its .pub file (default: $OPQ_COORDINATOR_KEY).")
    public var coordinatorKey: String?

    @Option(help: ArgumentHelp(
        "Comma-separated handler kinds this worker runs, or 'all' (default: all; all but shell when --connect is not loopback).",
        valueName: "kinds"))
    public var allowKinds: String?

    @Option(help: ArgumentHelp(
        "Comma-separated absolute paths of the executables shell operations may start; a path ending in / allows the files under that directory. Only argv-form operations run then ('command' strings are refused).",
        valueName: "paths"))
    public var shellAllow: String?

    @Option(help: ArgumentHelp("Run shell operations' processes as this user (the worker must run as root).", valueName: "user"))
    public var runAs: String?

    @Option(help: ArgumentHelp(
        "Comma-separated worker environment variables (globs such as AWS_* allowed) passed to shell operations, which otherwise get only PATH, HOME, USER, LOGNAME, LANG, LC_ALL, TZ, TMPDIR, the operation's env and the OPQ_* variables of the run.",
        valueName: "names"))
    public var passEnv: String?

    @Option(help: ArgumentHelp(
        "Bytes of stdout and of stderr of each shell operation kept as its attempt's output (the last ones; 'opctl logs'); 0 keeps none (default: 16384; at most 1048576).",
        valueName: "bytes"))
    public var logTailBytes: Int = ShellHandler.defaultLogTailLimit

    public init() {}

    public func validate() throws {
        if let slots, slots < 1 { throw ValidationError("--slots must be ≥ 1") }
        if let prefetch, prefetch < 0 { throw ValidationError("--prefetch must be ≥ 0") }
        if logTailBytes < 0 || logTailBytes > WireLimits.maxLogTailSize {
            throw ValidationError("--log-tail-bytes must be between 0 and \(WireLimits.maxLogTailSize), got \(logTailBytes)")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        if let (_, problem) = CoordinatorEndpoints(endpoint).problem() {
            throw ValidationError("\(connect == nil ? "$OPCOORD" : "--connect"): \(problem)")
        }
        do { _ = try ClientKeys.resolve(key: key, coordinatorKey: coordinatorKey) } catch { throw ValidationError("\(error)") }
    }

    /// --connect, else $OPCOORD, else tcp://127.0.0.1:7600; HOST:PORT is taken as tcp://HOST:PORT (as opctl does).
    /// Several, separated by commas (coordinators of one `--ha` group): the worker registers with the leader.
    var endpoint: String {
        CoordinatorEndpoints(connect ?? ProcessInfo.processInfo.environment["OPCOORD"].flatMap { $0.isEmpty ? nil : $0 }
                             ?? "tcp://127.0.0.1:7600").all.joined(separator: ",")
    }

    public var config: WorkerConfig {
        let tagList = (tags ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var config = WorkerConfig(connect: endpoint, name: name, slots: slots, tags: tagList, prefetch: prefetch)
        config.curve = try? ClientKeys.resolve(key: key, coordinatorKey: coordinatorKey)   // checked by validate()
        return config
    }
}

/// The body of `opworker`, for custom worker executables: their handlers plus the built-ins.
public enum WorkerMain {
    public static func run(options: WorkerOptions, registry: HandlerRegistry) throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "opworker")
        logger.logLevel = Logger.Level(rawValue: options.logLevel) ?? .info
        // Each running shell operation holds pipe descriptors; a failure to raise is not fatal.
        do {
            let limit = try FileDescriptorLimit.raiseSoftToHard()
            logger.debug("open-file limit: \(limit.soft) (hard \(limit.hard))")
        } catch {
            logger.warning("cannot raise the open-file limit, keeping the current one: \(error)")
        }
        let limited: HandlerRegistry
        do {
            limited = try options.limit(registry, logger: logger)
        } catch {
            logger.critical("\(error)")
            throw ExitCode.failure
        }
        let agent = try WorkerAgent(config: options.config, registry: limited, logger: logger)
        let signals = StopSignals(stop: { _ in agent.stop() })
        do {
            try agent.run()
        } catch {
            logger.critical("\(error)")
            throw ExitCode.failure
        }
        withExtendedLifetime(signals) {}
    }
}
