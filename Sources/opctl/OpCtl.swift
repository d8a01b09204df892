import ArgumentParser
import Foundation
import OpClient
import ZeroMQ

@main
struct OpCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opctl",
        abstract: "Submit, watch and control operations on an opqueue coordinator.",
        discussion: """
            The coordinator address comes from --coordinator, else $OPCOORD, else tcp://127.0.0.1:7600. \
            The connection options (--coordinator, --request-timeout, --key, --coordinator-key) may also \
            come before the subcommand: opctl --coordinator HOST:7600 runs.
            Exit status: 0 success; 1 operations failed or were cancelled (submit --wait, wait); \
            2 a rejected graph (every problem is printed); 3 the coordinator could not be reached, went away \
            before it replied, refused the request, or sent a reply that cannot be accepted (over the 16 MiB \
            frame limit, or malformed); 4 a wait timed out; 5 the coordinator does not know an operation, run \
            or queue asked about (never submitted, evicted, or gone with a state directory it was not \
            restarted with); 64 bad command-line arguments.
            Every request is checked against the protocol's limits before it is sent (docs/PROTOCOL.md §10): \
            a payload over 1 MiB, an id over 1024 bytes, more than 8192 ids or operations in one message, or \
            a message over 16 MiB is refused at once with what and which limit (a graph: exit 2, nothing is \
            sent; other requests: exit 64) instead of being dropped on the way.
            """,
        subcommands: [Submit.self, Status.self, Why.self, Cancel.self, Suspend.self, Resume.self, Limit.self, Share.self,
                      Priority.self, Wait.self, Workers.self, Watch.self, Runs.self, Logs.self, Story.self, Keys.self, HA.self])

    /// The connection options may come before the subcommand too (`GlobalOptions`).
    static func main() {
        main(GlobalOptions.hoisted(Array(CommandLine.arguments.dropFirst())))
    }
}

/// Options every subcommand shares.
struct Connection: ParsableArguments {
    @Option(name: .long, help: "Coordinator endpoint, tcp://HOST:PORT or HOST:PORT (default: $OPCOORD or tcp://127.0.0.1:7600).")
    var coordinator: String?

    @Option(name: .customLong("request-timeout"),
            help: "Seconds to wait for each reply; for wait and submit --wait, to reach the coordinator at first (their WAIT lasts until --timeout).")
    var requestTimeout: Double = 10

    @Option(help: "Your secret key file, for a coordinator with keys (default: $OPQ_KEY; make one with 'opctl keys new').")
    var key: String?

    @Option(help: "The coordinator's public key, or its .pub file (default: $OPQ_COORDINATOR_KEY).")
    var coordinatorKey: String?

    func connect() throws -> CoordinatorConnection {
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be > 0") }
        let curve: CurveClientKeys?
        do { curve = try ClientKeys.resolve(key: key, coordinatorKey: coordinatorKey) } catch {
            printError("opctl: \(error)")
            throw ExitCode(64)
        }
        return try CoordinatorConnection(endpoint: coordinator ?? CoordinatorConnection.defaultEndpoint,
                                         timeout: .milliseconds(Int(requestTimeout * 1000)), curve: curve)
    }

    /// A connection to one coordinator of several (`opctl ha`), with the same keys and timeout.
    func connect(to endpoint: String) throws -> CoordinatorConnection {
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be > 0") }
        let curve: CurveClientKeys?
        do { curve = try ClientKeys.resolve(key: key, coordinatorKey: coordinatorKey) } catch {
            printError("opctl: \(error)")
            throw ExitCode(64)
        }
        return try CoordinatorConnection(endpoint: endpoint, timeout: .milliseconds(Int(requestTimeout * 1000)), curve: curve)
    }
}

/// Runs `body`, turning client errors into a message on stderr and an exit status (`report`).
func withCoordinator<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as ClientError {
        throw report(error)
    }
}

/// Prints `error` and returns its exit status: 64 for a request over the protocol's limits (built
/// from the arguments; it was not sent), 5 for what the coordinator does not know, else 3.
func report(_ error: ClientError) -> ExitCode {
    printError("opctl: \(error)")
    if case .invalidRequest = error { return ExitCode(64) }
    if case .badEndpoint = error { return ExitCode(64) }   // the arguments (or $OPCOORD), not the coordinator
    if case .server(.notFound, _) = error { return .notFound }
    return ExitCode(3)
}

extension ExitCode {
    /// An operation, run or queue the coordinator does not know (never submitted, evicted, or lost
    /// with a state directory it was not restarted with): apart from 3, which says it could not ask.
    static let notFound = ExitCode(5)
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
