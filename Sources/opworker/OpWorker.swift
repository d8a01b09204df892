import ArgumentParser
import Dispatch
import Foundation
import Logging
import WorkerAgent
import WorkerRuntime

@main
struct OpWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opworker",
        abstract: "An opqueue worker: runs operations the coordinator dispatches, in a local priority queue.",
        discussion: """
            Built-in handler kinds: shell, sleep, burn, noop, echo, fail (docs/HANDLERS.md). When the coordinator \
            is not on loopback, shell runs only if --allow-kinds allows it; shell operations get a scrubbed \
            environment (--pass-env adds to it). It reconnects with \
            backoff when the coordinator goes away; its operations keep running meanwhile, and it tells the \
            coordinator about them when it registers again. SIGINT or SIGTERM: running operations are \
            cancelled and handed back to the coordinator, which runs them again elsewhere.
            """)

    @OptionGroup var options: WorkerOptions

    func run() throws {
        try WorkerMain.run(options: options, registry: HandlerRegistry())
    }
}
