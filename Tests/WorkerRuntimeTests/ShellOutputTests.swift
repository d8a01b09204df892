import Foundation
import OpSpec
import Testing
@testable import WorkerRuntime

/// (1.5) The shell handler records the tails of stdout and stderr for `opctl logs`, whatever the outcome.
@Suite struct ShellOutputTests {
    func run(_ script: String, _ handler: ShellHandler = ShellHandler()) async -> (OperationOutcome, PartOutput?) {
        let c = context("shell", ShellCommand.script(script).encoded())
        return (await outcome(of: handler, c), c.output)
    }

    @Test func aFailedRunKeepsItsStdoutAndItsErrorTextAsBefore() async {
        let (result, output) = await run("echo partial; echo 'no such file' >&2; exit 3")
        #expect(result == .failed("exit code 3: no such file"))
        #expect(output == PartOutput(stdout: bytes("partial\n"), stderr: bytes("no such file\n")))
    }

    @Test func aSucceededRunKeepsItsStderr() async {
        let (result, output) = await run("echo ok; echo careful >&2")
        #expect(result == .succeeded(bytes("ok\n")))
        #expect(output?.stderr == bytes("careful\n") && output?.stdout == bytes("ok\n"))
    }

    @Test func theTailIsBoundedAndCountsWhatWasDropped() async {
        let handler = ShellHandler(outputLimit: 64, logTailLimit: 100)
        let (result, output) = await run("head -c 5000 /dev/zero | tr '\\0' a; printf END; head -c 300 /dev/zero | tr '\\0' e >&2", handler)
        // The result keeps its own limit; the log its own.
        #expect(result.result?.count == 64)
        #expect(output?.stdout.count == 100 && text(Array(output?.stdout.suffix(3) ?? [])) == "END")
        #expect(output?.stdoutDropped == 5003 - 100)
        #expect(output?.stderr.count == 100 && output?.stderrDropped == 200)
    }

    @Test func aLogTailLargerThanTheResultLimitIsKeptWhole() async {
        let handler = ShellHandler(outputLimit: 10, logTailLimit: 1000)
        let (result, output) = await run("head -c 500 /dev/zero | tr '\\0' b; exit 1", handler)
        #expect(result.isFailed)
        #expect(output?.stdout.count == 500 && output?.stdoutDropped == 0)
    }

    @Test func zeroTurnsItOffAndSilenceRecordsNothing() async {
        let (_, off) = await run("echo hi; echo there >&2", ShellHandler(logTailLimit: 0))
        #expect(off == nil)
        let (_, quiet) = await run("true")
        #expect(quiet == nil, "no output: nothing to send with FINISHED")
    }

    @Test func theQueueReportsTheOutputWithFinished() async throws {
        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1) { recorder.append($0) }
        let key = PartKey(opID: "r/a", attempt: 2)
        queue.submit(DispatchedPart(key: key, kind: "shell", payload: ShellCommand.script("echo out; echo err >&2; exit 1").encoded()))
        let events = try await recorder.wait("finished") { $0.contains { if case .finished = $0 { true } else { false } } }
        #expect(events.contains(.finished(key, .failed("exit code 1: err"), PartOutput(stdout: bytes("out\n"), stderr: bytes("err\n")))),
                "\(events)")
        // Handlers that record nothing (noop) report no output.
        let noop = PartKey(opID: "r/n")
        queue.submit(DispatchedPart(key: noop, kind: "noop"))
        let all = try await recorder.wait("noop finished") { $0.contains { $0.key == noop && { if case .finished = $0 { true } else { false } }($0) } }
        #expect(all.contains(.finished(noop, .succeeded([]), nil)))
    }
}
