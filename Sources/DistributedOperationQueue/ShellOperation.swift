import Foundation
import WorkerRuntime

/// The built-in `shell` kind as a typed operation: its input is the shell payload (`ShellCommand`:
/// argv or a command line, env, cwd, grace), its output the tail of stdout. Every `opworker` runs it
/// (with its `--shell-allow`, `--run-as` and `--pass-env` limits); a typed operation finds its output
/// with `context.output(of: ShellOperation.self)`, and a shell command reads a typed dependency's
/// output (JSON) from `$OPQ_INPUT_<ID>`.
public struct ShellOperation: DistributedOperation {
    public static let kind = BuiltinKind.shell
    public var command: ShellCommand

    public init(_ command: ShellCommand) { self.command = command }
    /// A command line run by `/bin/sh -c`.
    public init(_ script: String, env: [String: String] = [:]) { command = .script(script, env: env) }
    public init(argv: [String], env: [String: String] = [:]) { command = .argv(argv, env: env) }

    /// The wire form is the shell payload itself: `{"command": …}` or `{"argv": […]}`.
    public init(from decoder: any Decoder) throws { command = try ShellCommand(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try command.encode(to: encoder) }

    /// Served by the worker's built-in `shell` handler (`OpWorker` does not register this type); run
    /// here only when a worker of your own registers it, then without the worker's shell limits.
    public func main(_ context: OperationContext) async throws -> ShellOutput {
        ShellOutput(stdout: Data(try await ShellHandler().run(context)))
    }

    /// The result is stdout's bytes as they are, not JSON.
    public static func encodeOutput(_ output: ShellOutput) throws -> [UInt8] { Array(output.stdout) }
    public static func decodeOutput(_ bytes: [UInt8]) throws -> ShellOutput { ShellOutput(stdout: Data(bytes)) }
}

/// What a shell operation that succeeded (exit status 0) printed: the tail of its stdout (the
/// worker keeps the last 64 KiB). A non-zero exit fails the operation, with the status and the tail
/// of stderr in its message.
public struct ShellOutput: Codable, Sendable, Hashable {
    public var stdout: Data
    public init(stdout: Data) { self.stdout = stdout }
    /// stdout as UTF-8 text.
    public var text: String { String(decoding: stdout, as: UTF8.self) }
    /// stdout without its trailing newlines.
    public var trimmed: String { String(text.reversed().drop(while: { $0 == "\n" || $0 == "\r\n" }).reversed()) }
}
