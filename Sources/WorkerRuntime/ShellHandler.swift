import Foundation
import OpSpec
import Subprocess
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `shell`: runs a process (argv, or a command line by `/bin/sh -c`) with swift-subprocess.
///
/// - Environment: not the worker's (it may hold secrets) but a few of its variables and those
///   named by `--pass-env` (`ChildEnvironment`), then the payload's `env`, then `OPQ_OP_ID`,
///   `OPQ_PART`, `OPQ_ATTEMPT`, `OPQ_TMPDIR` (a private directory removed after the run; also the
///   default working directory), `OPQ_INPUTS_DIR` (one file per dependency result, named by the
///   dependency id) and `OPQ_INPUT_<ID>` (the path of each of those files).
/// - Limits (`ShellLimits`): allowed executables (argv form only), the user children run as.
/// - Result: the last `outputLimit` bytes of stdout. Exit code ≠ 0 → failed with the exit code
///   and the tail of stderr; killed by a signal → failed naming the signal.
/// - Output (1.5): the last `logTailLimit` bytes of stdout and of stderr, with the counts of bytes
///   before them, are recorded on the context whatever the outcome (`OperationContext.recordOutput`),
///   so they travel with FINISHED and `opctl logs` shows them per attempt; 0 records nothing.
/// - Process group: the child leads a new group (swift-subprocess's `processGroupID = 0`,
///   posix_spawn's SETPGROUP). On cancel, swift-subprocess's teardown sends SIGTERM to the group
///   and SIGKILL after the grace period. After the child exits, whatever is left in its group
///   (background jobs, a grandchild that ignored SIGTERM) is killed, so no run leaves a process.
/// - The group dies with the worker: the child is `/bin/sh` running `Lifeline.script`, which starts
///   a watcher in the group and then `exec`s the command (same pid, argv[0] as given). The watcher
///   kills the group when the worker process is gone, even after SIGKILL (see `Lifeline` for why
///   this and not `PR_SET_PDEATHSIG`).
/// - QoS → nice level of the child's group (`OperationQoS.niceLevel`): userInteractive 0,
///   userInitiated 2, default 5, utility 10, background 19; later children inherit it.
///   swift-subprocess has no pre-exec hook, so the level is set with `setpriority(PRIO_PGRP)`
///   right after spawn, as an absolute value. Not `nice -n N` as a wrapper: that is relative to
///   the spawning thread's nice value, and Swift's thread pool threads have different ones
///   (−2 was seen for high-priority tasks when running as root). A child that finishes within
///   microseconds may run at the thread's level; lowering the level below the worker's own
///   needs CAP_SYS_NICE and otherwise stays where it was.
public struct ShellHandler: OperationHandler {
    public var kind: String { BuiltinKind.shell }
    /// Bytes of stdout (result) and stderr (error text) kept; earlier output is dropped.
    public var outputLimit: Int
    /// Bytes of stdout and of stderr kept as the attempt's output log (opworker --log-tail-bytes); 0 = none.
    public var logTailLimit: Int
    /// The default of `logTailLimit`: 16 KiB per stream.
    public static let defaultLogTailLimit = 16 << 10
    /// SIGTERM → SIGKILL delay when the payload gives none.
    public var defaultGrace: Duration
    /// Where per-run directories are made; `nil` = `$TMPDIR` or `/tmp`.
    public var tempRoot: String?
    /// Apply the QoS nice level.
    public var applyNice: Bool
    /// Called with the child's pid right after it started (observability and tests).
    public var onSpawn: (@Sendable (_ context: OperationContext, _ pid: Int32) -> Void)?
    /// What children may run, as whom, with which environment (opworker --shell-allow, --run-as, --pass-env).
    public var limits: ShellLimits
    /// The worker environment children take variables from (a parameter for tests).
    public var workerEnvironment: [String: String]

    public init(outputLimit: Int = 64 * 1024, defaultGrace: Duration = .seconds(2), tempRoot: String? = nil,
                applyNice: Bool = true, limits: ShellLimits = ShellLimits(), logTailLimit: Int = ShellHandler.defaultLogTailLimit,
                workerEnvironment: [String: String] = ProcessInfo.processInfo.environment,
                onSpawn: (@Sendable (OperationContext, Int32) -> Void)? = nil) {
        self.outputLimit = outputLimit
        self.logTailLimit = max(0, logTailLimit)
        self.defaultGrace = defaultGrace
        self.tempRoot = tempRoot
        self.applyNice = applyNice
        self.limits = limits
        self.workerEnvironment = workerEnvironment
        self.onSpawn = onSpawn
    }

    public func run(_ context: OperationContext) async throws -> [UInt8] {
        let command = try ShellCommand.decode(context.payload)
        let root = tempRoot ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let workDir = try ShellWorkDir.create(root: root, key: context.part.key)
        defer { workDir.remove() }

        var variables = try workDir.writeInputs(context.inputList)
        variables["OPQ_OP_ID"] = context.opID
        variables["OPQ_PART"] = String(context.partIndex)
        variables["OPQ_ATTEMPT"] = String(context.attempt)
        variables["OPQ_TMPDIR"] = workDir.path
        variables["OPQ_INPUTS_DIR"] = workDir.inputsDir
        let runAs = limits.runAs
        let childEnvironment = limits.environment.build(worker: workerEnvironment, user: runAs, payload: command.env, run: variables)
        var environment: [Environment.Key: String] = [:]
        for (name, value) in childEnvironment {
            if let key = Environment.Key(rawValue: name) { environment[key] = value }
        }

        let argv = command.commandLine
        let cwd = command.cwd ?? workDir.path
        guard let program = Self.resolve(argv[0], searchPath: childEnvironment["PATH"] ?? ChildEnvironment.defaultPath, cwd: cwd) else {
            throw HandlerError("cannot start \(argv[0]): " + (argv[0].contains("/") ? "no executable file there" : "not found in PATH"))
        }
        if let refusal = limits.refusal(for: command, program: program) { throw HandlerError(refusal) }
        // Switching needs root; a worker already running as that user has nothing to switch.
        let switchUser = runAs.flatMap { $0.uid == geteuid() ? nil : $0 }
        if let switchUser { try workDir.give(to: switchUser) }
        let nice: Int32? = applyNice ? context.qos.niceLevel : nil
        // Resolved here so a missing program fails with a clear message. The wrapper's `exec` gets
        // the name as given, so argv[0] stays as given (dash's `exec` has no `-a`); it finds the same
        // file in the same PATH. A name starting with "-" would read as an option: give the path.
        // With allowed executables, the checked path itself, so what runs is what was checked.
        let name = argv[0].hasPrefix("-") || limits.executables != nil ? program : argv[0]
        let lifeline = try Lifeline.readEnd()
        let executable = Executable.path("/bin/sh")
        let arguments = Arguments(["-c", Lifeline.script, Lifeline.shellName, name] + Array(argv.dropFirst()))
        let grace = command.grace.map { Duration.milliseconds(Int64(($0 * 1000).rounded())) } ?? defaultGrace
        var options = PlatformOptions()
        options.processGroupID = 0
        if let runAs = switchUser {
            options.supplementaryGroups = runAs.groups
            options.groupID = runAs.gid
            options.userID = runAs.uid
        }
        options.teardownSequence = [.send(signal: .terminate, toProcessGroup: true, allowedDurationToNextStep: grace)]

        // One buffer per stream serves the result or error text and the output log.
        let limit = max(outputLimit, logTailLimit)
        let onSpawn = self.onSpawn
        let group = Mutex<Int32>(0)
        defer {
            // Sweep the group: stragglers that outlived the child die with it. The group id
            // stays reserved while any member lives, so this cannot hit an unrelated process
            // group unless the id was recycled in the microseconds since the last member exited.
            let pgid = group.withLock { $0 }
            if pgid > 0 { _ = kill(-pgid, SIGKILL) }
        }

        let outcome: ExecutionResult<(TailBuffer, TailBuffer), SequenceOutput, SequenceOutput>
        do {
            outcome = try await Subprocess.run(
                executable,
                arguments: arguments,
                environment: .custom(environment),
                workingDirectory: .init(cwd),
                platformOptions: options,
                // The lifeline's read end; the wrapper gives the command /dev/null instead.
                input: .fileDescriptor(.init(rawValue: lifeline), closeAfterSpawningProcess: false),
                output: .sequence,
                error: .sequence
            ) { execution in
                let pid = execution.processIdentifier.value
                group.withLock { $0 = pid }
                if let nice { _ = setpriority(__priority_which_t(PRIO_PGRP.rawValue), id_t(pid), nice) }
                onSpawn?(context, pid)
                async let out = Self.collect(execution.standardOutput, limit: limit)
                async let err = Self.collect(execution.standardError, limit: limit)
                return try await (out, err)
            }
        } catch {
            if context.isCancelled { throw CancellationError() }
            if group.withLock({ $0 }) == 0 {
                throw HandlerError("cannot start \(argv[0]): \(error)")
            }
            throw HandlerError("\(argv[0]): \(error)")
        }

        let (out, err) = outcome.closureResult
        if logTailLimit > 0 {
            let (stdout, stdoutDropped) = out.last(logTailLimit), (stderr, stderrDropped) = err.last(logTailLimit)
            context.recordOutput(PartOutput(stdout: stdout, stderr: stderr, stdoutDropped: stdoutDropped, stderrDropped: stderrDropped))
        }
        switch outcome.terminationStatus {
        case .exited(0):
            return out.last(outputLimit).bytes
        case .exited(let code):
            throw HandlerError("exit code \(code)" + Self.errorText(err, limit: outputLimit))
        case .signaled(let signal):
            if context.isCancelled { throw CancellationError() }
            throw HandlerError("killed by signal \(signal) (\(Self.signalName(signal)))" + Self.errorText(err, limit: outputLimit))
        }
    }

    /// `name` if it contains `/` (relative to `cwd`, where the child will run) and is executable,
    /// else the first executable `dir/name` in `searchPath`.
    static func resolve(_ name: String, searchPath: String, cwd: String) -> String? {
        if name.contains("/") {
            let path = name.hasPrefix("/") ? name : cwd + "/" + name
            return access(path, X_OK) == 0 ? path : nil
        }
        for dir in searchPath.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = dir + "/" + name
            var info = stat()
            if stat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    static func collect(_ sequence: SubprocessOutputSequence, limit: Int) async throws -> TailBuffer {
        var buffer = TailBuffer(limit: limit)
        for try await chunk in sequence {
            chunk.withUnsafeBytes { buffer.append($0) }
        }
        return buffer
    }

    static func errorText(_ err: TailBuffer, limit: Int) -> String {
        let (tail, dropped) = err.last(limit)
        let text = String(decoding: tail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return "" }
        return dropped > 0 ? ": […] " + text : ": " + text
    }

    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGKILL: "SIGKILL"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGSEGV: "SIGSEGV"
        case SIGABRT: "SIGABRT"
        case SIGPIPE: "SIGPIPE"
        case SIGBUS: "SIGBUS"
        case SIGFPE: "SIGFPE"
        case SIGILL: "SIGILL"
        default: "signal \(signal)"
        }
    }
}
