import Logging
import OpSpec
import WorkerRuntime

extension WorkerOptions {
    /// `registry` with the limits of --allow-kinds, --shell-allow, --run-as and --pass-env applied,
    /// each logged. Throws when one cannot be honoured (an unknown kind or user, a missing path, not
    /// root for --run-as): a worker that would silently run more than asked must not start.
    public func limit(_ registry: HandlerRegistry, logger: Logger) throws -> HandlerRegistry {
        var registry = registry
        let kinds = try AllowedKinds.decide(allowKinds, endpoint: config.connect, registered: registry.registeredKinds)
        logger.info("allowed kinds: \(kinds.allowed.joined(separator: ", ")) — \(kinds.why)")
        for kind in kinds.refused { registry.refuse(kind: kind, reason: AllowedKinds.refusal(kind)) }

        let limits = ShellLimits(executables: try shellAllow.map(ExecutableAllowList.init(parsing:)),
                                 runAs: try runAs.map { try RunAsUser.resolve($0) },
                                 environment: ChildEnvironment.parse(passEnv ?? ""))
        guard var shell = registry.handler(for: BuiltinKind.shell) as? ShellHandler else {
            if shellAllow != nil || runAs != nil || passEnv != nil || logTailBytes != ShellHandler.defaultLogTailLimit {
                logger.warning("--shell-allow, --run-as, --pass-env and --log-tail-bytes apply to the built-in shell kind, which this worker does not run")
            }
            return registry
        }
        shell.limits = limits
        shell.logTailLimit = logTailBytes
        registry.register(shell)
        logger.info("shell operations: \(limits.summary)")
        return registry
    }
}
