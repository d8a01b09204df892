/// Kind name → handler. The built-ins are registered unless asked otherwise; registering a
/// kind again replaces the earlier handler (so a worker can override a built-in).
public struct HandlerRegistry: Sendable {
    private var handlers: [String: any OperationHandler] = [:]

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

    public func handler(for kind: String) -> (any OperationHandler)? { handlers[kind] }

    /// Registered kinds, sorted (what a worker announces when it registers).
    public var kinds: [String] { handlers.keys.sorted() }
}
