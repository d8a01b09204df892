/// Kind name → handler. The built-ins are registered unless asked otherwise; registering a
/// kind again replaces the earlier handler (so a worker can override a built-in).
public struct HandlerRegistry: Sendable {
    private var handlers: [String: any OperationHandler] = [:]
    /// Kinds this worker will not run (opworker --allow-kinds) → the failure text of a part of one.
    private var refusals: [String: String] = [:]

    /// - Parameter builtins: register `shell`, `sleep`, `noop`, `echo`, `fail` and `burn`.
    public init(builtins: Bool = true, shell: ShellHandler = ShellHandler()) {
        if builtins {
            register(NoopHandler())
            register(EchoHandler())
            register(FailHandler())
            register(SleepHandler())
            register(BurnHandler())
            register(shell)
        }
    }

    public mutating func register(_ handler: any OperationHandler) {
        handlers[handler.kind] = handler
    }

    /// Registers a closure as the handler of `kind`.
    public mutating func register(kind: String, _ body: @escaping @Sendable (OperationContext) async throws -> [UInt8]) {
        register(ClosureHandler(kind: kind, body))
    }

    /// Refuses `kind` from now on: it is not announced, and a part of it that still arrives (a
    /// coordinator that ignores the announced kinds) fails with `reason` instead of running.
    public mutating func refuse(kind: String, reason: String) {
        refusals[kind] = reason
    }

    /// The handler of `kind`, unless there is none or the kind is refused.
    public func handler(for kind: String) -> (any OperationHandler)? { refusals[kind] == nil ? handlers[kind] : nil }

    /// Why `kind` is refused here, if it is.
    public func refusal(for kind: String) -> String? { refusals[kind] }

    /// Kinds that run here, sorted (what a worker announces when it registers).
    public var kinds: [String] { handlers.keys.filter { refusals[$0] == nil }.sorted() }

    /// Every registered kind, refused ones included.
    public var registeredKinds: [String] { handlers.keys.sorted() }
}
