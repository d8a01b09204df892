import ArgumentParser
import Foundation
import OpClient

@main
struct OpCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opctl",
        abstract: "Submit, watch and control operations on an opqueue coordinator.",
        discussion: """
            The coordinator address comes from --coordinator, else $OPCOORD, else tcp://127.0.0.1:7600.
            Exit status: 0 success; 1 operations failed or were cancelled (submit --wait, wait); \
            2 a rejected graph (every problem is printed); 3 the coordinator could not be reached or refused \
            the request; 4 a wait timed out; 64 bad command-line arguments.
            """,
        subcommands: [Submit.self, Status.self, Why.self, Cancel.self, Suspend.self, Resume.self, Limit.self,
                      Priority.self, Wait.self, Workers.self, Watch.self])
}

/// Options every subcommand shares.
struct Connection: ParsableArguments {
    @Option(name: .long, help: "Coordinator endpoint (default: $OPCOORD or tcp://127.0.0.1:7600).")
    var coordinator: String?

    @Option(name: .customLong("request-timeout"), help: "Seconds to wait for each reply.")
    var requestTimeout: Double = 10

    func connect() throws -> CoordinatorConnection {
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be > 0") }
        return try CoordinatorConnection(endpoint: coordinator ?? CoordinatorConnection.defaultEndpoint,
                                         timeout: .milliseconds(Int(requestTimeout * 1000)))
    }
}

/// Runs `body`, turning client errors into a message on stderr and exit status 3.
func withCoordinator<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as ClientError {
        printError("opctl: \(error)")
        throw ExitCode(3)
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
