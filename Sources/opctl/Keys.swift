import ArgumentParser
import ZeroMQ

/// `opctl keys new PATH`: a CURVE key pair for a coordinator, a worker or a user (docs/DEPLOY.md "Keys and roles").
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Make CURVE key pairs for coordinators, workers and users.",
        subcommands: [New.self])

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new",
            abstract: "Write a new key pair: the secret key to PATH (mode 0600), the public key to PATH.pub.",
            discussion: """
                PATH.pub holds the 40-character public key on one line: paste it into the coordinator's \
                allow file ("PUBLIC-KEY NAME ROLES [SCOPE…]") for a worker or user key, or give it to \
                workers and users as --coordinator-key for the coordinator's. Existing files are never \
                overwritten.
                """)

        @Argument(help: "Where to write the secret key; the public key goes to PATH.pub.")
        var path: String

        func run() throws {
            do {
                let pair = try KeyFile.create(at: path)
                print("secret key: \(path) (mode 0600, keep it private)")
                print("public key: \(path).pub  \(Z85.encode(pair.publicKey))")
            } catch {
                printError("opctl: \(error)")
                throw ExitCode.failure
            }
        }
    }
}
