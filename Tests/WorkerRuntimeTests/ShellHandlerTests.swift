import Foundation
import OpSpec
import Testing
@testable import WorkerRuntime

@Suite struct ShellHandlerTests {
    func shell(_ command: ShellCommand, inputs: [DispatchedPart.Input] = [], handler: ShellHandler = ShellHandler(),
               id: String = "op") async -> OperationOutcome {
        await outcome(of: handler, context("shell", command.encoded(), inputs: inputs, id: id))
    }

    @Test func stdoutIsTheResult() async {
        #expect(await shell(.script("printf 'hello\\n'")) == .succeeded(bytes("hello\n")))
    }

    @Test func argvIsPassedWithoutAShell() async {
        #expect(await shell(.argv(["printf", "%s|", "a b", "$HOME"])) == .succeeded(bytes("a b|$HOME|")))
    }

    @Test func nonZeroExitFailsWithCodeAndStderr() async {
        let result = await shell(.script("echo partial; echo 'no such file' >&2; exit 3"))
        #expect(result == .failed("exit code 3: no such file"))
    }

    @Test func nonZeroExitWithoutStderr() async {
        #expect(await shell(.script("exit 7")) == .failed("exit code 7"))
    }

    @Test func missingExecutableFails() async {
        let result = await shell(.argv(["/nonexistent/tool"]))
        #expect(result.isFailed)
        #expect(result.message?.hasPrefix("cannot start /nonexistent/tool") == true)
    }

    @Test func killedBySignalFails() async {
        #expect(await shell(.script("kill -SEGV $$")) == .failed("killed by signal 11 (SIGSEGV)"))
    }

    @Test func outputKeepsOnlyABoundedTail() async {
        let handler = ShellHandler(outputLimit: 1000)
        // 200,000 bytes of stdout ending in a marker; 50,000 of stderr.
        let result = await shell(.script("head -c 200000 /dev/zero | tr '\\0' a; printf END; head -c 50000 /dev/zero | tr '\\0' e >&2; printf ERR >&2"),
                                 handler: handler)
        let out = result.result ?? []
        #expect(out.count == 1000)
        #expect(text(Array(out.suffix(3))) == "END")

        let failing = await shell(.script("head -c 50000 /dev/zero | tr '\\0' e >&2; printf LAST >&2; exit 1"), handler: handler)
        let message = failing.message ?? ""
        #expect(message.hasPrefix("exit code 1: […] eee"))
        #expect(message.hasSuffix("LAST"))
        #expect(message.utf8.count < 1100)
    }

    @Test func inputsAndIdentityAreInTheEnvironment() async {
        let inputs: [DispatchedPart.Input] = [.init(id: "fetch-1", result: bytes("one")), .init(id: "b", result: [0, 1, 2])]
        let script = """
            printf '%s/%s/%s/%s|' "$OPQ_OP_ID" "$OPQ_PART" "$OPQ_ATTEMPT" "$(cat "$OPQ_INPUT_FETCH_1")"
            wc -c < "$OPQ_INPUT_B" | tr -d ' \\n'
            printf '|'; ls "$OPQ_INPUTS_DIR" | tr '\\n' ,
            """
        #expect(await shell(.script(script), inputs: inputs, id: "agg") == .succeeded(bytes("agg/0/1/one|3|b,fetch-1,")))
    }

    @Test func envMergesOverTheWorkers() async {
        let result = await shell(.script("printf '%s %s' \"$GREETING\" \"${PATH:+has-path}\""), handler: ShellHandler())
        #expect(result == .succeeded(bytes(" has-path")))
        #expect(await shell(.script("printf %s \"$GREETING\"", env: ["GREETING": "hi"])) == .succeeded(bytes("hi")))
    }

    @Test func cwdIsUsedAndDefaultsToAPrivateTempDir() async throws {
        #expect(await shell(.script("pwd", cwd: "/usr")) == .succeeded(bytes("/usr\n")))
        let result = await shell(.script("pwd; test \"$(pwd)\" = \"$OPQ_TMPDIR\" && echo same"))
        let lines = text(result.result).split(separator: "\n")
        #expect(lines.count == 2 && lines[1] == "same")
        // The private directory is removed after the run.
        #expect(!FileManager.default.fileExists(atPath: String(lines[0])))
    }

    @Test func badCwdFails() async {
        let result = await shell(.script("true", cwd: "/nonexistent/dir"))
        #expect(result.message?.hasPrefix("cannot start /bin/sh: ") == true)
        #expect(result.message?.contains("/nonexistent/dir") == true)
    }

    @Test func qosSetsTheNiceLevelOfTheGroup() async {
        // `onSpawn` runs right after the level is set: read the child's nice from /proc then.
        // The level is set after spawn (late under load), so the child waits (bounded) until it
        // sees it, then starts another process, which must inherit it.
        func script(_ level: Int) -> String {
            "i=0; while [ \"$(cut -d' ' -f19 /proc/$$/stat)\" != \(level) ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; nice"
        }
        for (qos, level) in [(OperationQoS.background, 19), (.utility, 10), (.default, 5), (.userInteractive, 0)] {
            let seen = Recorded<Int>()
            let handler = ShellHandler(onSpawn: { _, pid in seen.append(niceLevel(of: pid) ?? -100) })
            let result = await outcome(of: handler, OperationContext(
                part: DispatchedPart(key: PartKey(opID: "n"), kind: "shell",
                                     payload: ShellCommand.script(script(level)).encoded(), qos: qos)))
            #expect(seen.values == [level], "\(qos)")
            #expect(result == .succeeded(bytes("\(level)\n")), "\(qos)")
        }
    }

    @Test func relativeProgramIsFoundInTheWorkingDirectory() async {
        #expect(await shell(.argv(["./true"], cwd: "/bin")) == .succeeded([]))
        #expect(await shell(.argv(["./nothing-here"], cwd: "/bin"))
                    == .failed("cannot start ./nothing-here: no executable file there"))
        #expect(await shell(.argv(["no-such-tool-xyz"])) == .failed("cannot start no-such-tool-xyz: not found in PATH"))
    }

    @Test func argvZeroIsKept() async {
        #expect(await shell(.argv(["sh", "-c", "echo $0"])) == .succeeded(bytes("sh\n")))
    }

    @Test func backgroundJobsDoNotOutliveTheRun() async throws {
        let pids = Recorded<Int32>()
        let handler = ShellHandler(onSpawn: { _, pid in pids.append(pid) })
        // The child starts a background sleep that keeps stdout open, then exits at once.
        let result = await outcome(of: handler, context("shell", ShellCommand.script("sleep 30 >/dev/null 2>&1 & echo started").encoded()))
        #expect(result == .succeeded(bytes("started\n")))
        let pgid = try #require(pids.values.first)
        #expect(await groupGone(pgid))
    }

    /// The command runs behind the lifeline wrapper (it dies with the worker; OrphanTests kills a
    /// real worker): it still reads /dev/null, keeps its pid as the group's, and does not see the pipe.
    @Test func theLifelineWrapperIsInvisibleToTheCommand() async throws {
        let pids = Recorded<Int32>()
        let handler = ShellHandler(onSpawn: { _, pid in pids.append(pid) })
        // stdin at end of file at once; no fd 3; $$ and its process group (field 5 of /proc/$$/stat).
        let script = "cat; echo read-eof; [ -e /proc/$$/fd/3 ] || echo no-fd-3; echo $$ $(cut -d' ' -f5 /proc/$$/stat)"
        let result = await outcome(of: handler, context("shell", ShellCommand.script(script).encoded()))
        let spawned = try #require(pids.values.first)
        #expect(result == .succeeded(bytes("read-eof\nno-fd-3\n\(spawned) \(spawned)\n")),
                "the command is the spawned process and leads its group")
        #expect(await groupGone(spawned), "the watcher ends with the run")
    }

    @Test func badPayloadFails() async {
        let result = await outcome(of: ShellHandler(), context("shell", bytes("ls -l")))
        #expect(result.message?.hasPrefix("shell payload is not valid JSON") == true)
    }
}
