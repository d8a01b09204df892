import OpSpec

/// What a worker lets `shell` ops do (opworker --shell-allow, --run-as, --pass-env). The default
/// limits nothing but the environment, which is never inherited (`ChildEnvironment`).
public struct ShellLimits: Sendable, Equatable {
    /// nil: any program, and `command:` strings. Set: only argv-form ops whose program is allowed.
    public var executables: ExecutableAllowList?
    /// nil: children run as the worker's user.
    public var runAs: RunAsUser?
    public var environment: ChildEnvironment

    public init(executables: ExecutableAllowList? = nil, runAs: RunAsUser? = nil, environment: ChildEnvironment = ChildEnvironment()) {
        self.executables = executables
        self.runAs = runAs
        self.environment = environment
    }

    /// Why `command`, whose program resolved to `program`, may not run here; nil if it may.
    /// A `command:` string is refused whenever executables are limited: `/bin/sh -c` can chain any
    /// program (`allowed; curl … | sh`), so checking its first word would prove nothing.
    public func refusal(for command: ShellCommand, program: String) -> String? {
        guard let executables else { return nil }
        if case .script = command.program {
            return "a 'command' string runs through /bin/sh, which can start any program; this worker runs only "
                + "'argv' shell ops of allowed executables (opworker --shell-allow)"
        }
        return executables.refusal(for: program)
    }

    /// One line for the worker's start-up log.
    public var summary: String {
        let programs = executables.map { "argv-form only, executables " + $0.entries.joined(separator: ", ") } ?? "any command"
        let user = runAs.map { "\($0.name) (uid \($0.uid))" } ?? "the worker's user"
        let passed = environment.passed.isEmpty ? "" : ", " + environment.passed.joined(separator: ", ")
        return programs + "; run as " + user + "; environment: " + ChildEnvironment.kept.joined(separator: ", ")
            + passed + ", the operation's env and OPQ_*"
    }
}
