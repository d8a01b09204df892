import ArgumentParser
@_exported import DistributedOperationQueue
import Foundation
@_exported import WorkerAgent
@_exported import WorkerRuntime

/// A worker executable in one line: `opworker`'s whole command line plus typed operations.
///
/// ```swift
/// @main struct ImageWorker {
///     static func main() async throws {
///         try await OpWorker.main(operations: [Download.self, Thumbnail.self])
///     }
/// }
/// ```
public enum OpWorker {
    /// Parses the command line (`WorkerOptions`: --connect, --slots, --tags, --key, --allow-kinds, …;
    /// `--help` prints it), registers the built-in kinds, `operations` (each under its `kind`) and
    /// `handlers` (bytes handlers; they may replace a built-in), and runs until SIGINT/SIGTERM. Exits
    /// the process with the usage on a bad command line, and with status 1 when the coordinator rejects
    /// this worker. `arguments`: instead of the process's (tests).
    public static func main(operations: [any DistributedOperation.Type], handlers: [any OperationHandler] = [],
                            arguments: [String]? = nil) async throws {
        // Parsed here, read only by the worker's thread afterwards.
        nonisolated(unsafe) let options: WorkerOptions
        do {
            options = try WorkerOptions.parse(arguments)
        } catch {
            WorkerOptions.exit(withError: error)
        }
        let registry = try registry(operations: operations, handlers: handlers)
        do {
            // The agent owns a socket on the thread that runs it and blocks there: a thread of its own,
            // not one of Swift's cooperative pool, where the typed operations run.
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let thread = Thread {
                    do {
                        try WorkerMain.run(options: options, registry: registry)
                        c.resume()
                    } catch {
                        c.resume(throwing: error)
                    }
                }
                thread.name = "opqueue.worker"
                thread.start()
            }
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)            // WorkerMain has logged why
        }
    }

    /// The built-ins, then `operations`, then `handlers`. Throws when two operation types share a kind,
    /// or one takes a built-in kind (`ShellOperation` is left out: the built-in `shell` serves it).
    public static func registry(operations: [any DistributedOperation.Type],
                                handlers: [any OperationHandler] = []) throws -> HandlerRegistry {
        var registry = HandlerRegistry()
        let builtins = Set(registry.kinds)
        var seen: [String: String] = [:]
        for type in operations where type != ShellOperation.self {
            let kind = type.kind
            let name = String(describing: type)
            if let other = seen[kind] { throw OpWorkerError.duplicateKind(kind, first: other, second: name) }
            if builtins.contains(kind) { throw OpWorkerError.builtinKind(kind, type: name) }
            seen[kind] = name
            registry.register(type)
        }
        for h in handlers { registry.register(h) }
        return registry
    }
}

/// A list of operations `OpWorker` cannot serve.
public enum OpWorkerError: Error, Equatable, CustomStringConvertible {
    case duplicateKind(String, first: String, second: String)
    case builtinKind(String, type: String)

    public var description: String {
        switch self {
        case .duplicateKind(let kind, let a, let b):
            "\(a) and \(b) both have kind '\(kind)': give one another `static let kind`"
        case .builtinKind(let kind, let type):
            "\(type) has kind '\(kind)', a built-in kind of every worker: give it another `static let kind`"
        }
    }
}
