import Foundation
import OpSpec
import Testing
@testable import WorkerRuntime

/// What a worker lets operations do: refused kinds, allowed executables, the children's environment
/// and user (opworker --allow-kinds, --shell-allow, --pass-env, --run-as; docs/HANDLERS.md).
@Suite struct ShellLimitsTests {
    func run(_ command: ShellCommand, _ handler: ShellHandler, inputs: [DispatchedPart.Input] = []) async -> OperationOutcome {
        await outcome(of: handler, context("shell", command.encoded(), inputs: inputs))
    }

    /// A temporary directory, removed by the caller.
    func tempDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-limits-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return ExecutableAllowList.canonical(dir)!
    }

    // MARK: refused kinds

    @Test func aRefusedKindFailsWithItsReasonWithoutRunning() async throws {
        var registry = HandlerRegistry()
        let reason = "kind 'shell' is not allowed on this worker (opworker --allow-kinds)"
        registry.refuse(kind: "shell", reason: reason)
        #expect(registry.kinds == ["burn", "echo", "fail", "noop", "sleep"], "not announced")
        #expect(registry.handler(for: "shell") == nil)

        let recorder = EventRecorder()
        let queue = LocalOperationQueue(slots: 1, registry: registry, eventSink: recorder.sink)
        let refused = part("s", "shell", ShellCommand.script("echo ran").encoded())
        queue.submit(refused)
        #expect(try await recorder.waitFinished(refused.key) == .failed(reason))
        #expect(!recorder.events.contains(.started(refused.key)))
        let unknown = part("u", "resize")
        queue.submit(unknown)
        #expect(try await recorder.waitFinished(unknown.key)
                    == .failed("unknown handler kind \"resize\"; this worker has: burn, echo, fail, noop, sleep"))
    }

    // MARK: --shell-allow

    @Test func onlyAllowedExecutablesRun() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A directory entry with a tool in it, and a symlink in it that leads out of it.
        try FileManager.default.createDirectory(atPath: dir + "/tools", withIntermediateDirectories: true)
        try "#!/bin/sh\nprintf tool\n".write(toFile: dir + "/tools/tool", atomically: true, encoding: .utf8)
        chmod(dir + "/tools/tool", 0o755)
        let trueBinary = try #require(ExecutableAllowList.canonical("/usr/bin/true") ?? ExecutableAllowList.canonical("/bin/true"))
        try FileManager.default.createSymbolicLink(atPath: dir + "/tools/escape", withDestinationPath: trueBinary)
        let printf = try #require(ExecutableAllowList.canonical("/usr/bin/printf"))

        let allow = try ExecutableAllowList(parsing: "\(printf),\(dir)/tools/")
        let handler = ShellHandler(limits: ShellLimits(executables: allow))
        #expect(await run(.argv(["printf", "ok"]), handler) == .succeeded(bytes("ok")), "found in PATH, allowed")
        #expect(await run(.argv([dir + "/tools/tool"]), handler) == .succeeded(bytes("tool")), "under an allowed directory")

        let other = await run(.argv(["true"]), handler)
        #expect(other == .failed("executable \(trueBinary) is not allowed on this worker (opworker --shell-allow)"), "\(other)")
        let symlink = await run(.argv([dir + "/tools/escape"]), handler)
        #expect(symlink == .failed("executable \(dir)/tools/escape (\(trueBinary)) is not allowed on this worker (opworker --shell-allow)"),
                "a symlink is judged by what it points to: \(symlink)")
        let dotdot = await run(.argv([dir + "/tools/../../../../../../..\(trueBinary)"]), handler)
        #expect(dotdot.message?.hasSuffix("(\(trueBinary)) is not allowed on this worker (opworker --shell-allow)") == true, "\(dotdot)")
        let script = await run(.script("printf ok"), handler)
        #expect(script.message?.hasPrefix("a 'command' string runs through /bin/sh, which can start any program") == true,
                "a command string could chain anything: \(script)")
        // Unlimited, the same ops run.
        #expect(await run(.script("printf ok"), ShellHandler()) == .succeeded(bytes("ok")))
        #expect(await run(.argv(["true"]), ShellHandler()) == .succeeded([]))
    }

    @Test func shellAllowEntriesMustBeAbsoluteAndExist() throws {
        #expect(throws: LimitsError("--shell-allow bin/tool: not an absolute path")) { try ExecutableAllowList(parsing: "bin/tool") }
        #expect(throws: LimitsError("--shell-allow /no/such/tool: No such file or directory")) {
            try ExecutableAllowList(parsing: "/no/such/tool")
        }
        #expect(throws: LimitsError("--shell-allow needs at least one absolute path")) { try ExecutableAllowList(parsing: ",") }
        let list = ExecutableAllowList(entries: ["/opt/tools/", "/usr/bin/convert"])
        #expect(list.allows(canonical: "/opt/tools/a"))
        #expect(list.allows(canonical: "/opt/tools/sub/b"))
        #expect(list.allows(canonical: "/usr/bin/convert"))
        #expect(!list.allows(canonical: "/opt/toolsX/a"))
        #expect(!list.allows(canonical: "/usr/bin/convert2"))
        #expect(!list.allows(canonical: "/opt/tools"))
    }

    // MARK: environment

    @Test func theChildEnvironmentIsBuiltFromTheSafeListOnly() {
        let worker = ["PATH": "/w/bin", "HOME": "/home/w", "USER": "w", "LANG": "C.UTF-8", "TMPDIR": "/scratch",
                      "AWS_SECRET_ACCESS_KEY": "s3cret", "AWS_REGION": "eu", "DB_PASSWORD": "pw", "OPQ_DEMO_DIR": "/d"]
        let plain = ChildEnvironment().build(worker: worker, payload: ["LANG": "C"], run: ["OPQ_OP_ID": "a"])
        #expect(plain == ["PATH": "/w/bin", "HOME": "/home/w", "USER": "w", "LANG": "C", "TMPDIR": "/scratch", "OPQ_OP_ID": "a"])

        let passing = ChildEnvironment.parse("AWS_*, OPQ_DEMO_DIR")
        #expect(passing.passed == ["AWS_*", "OPQ_DEMO_DIR"])
        let passed = passing.build(worker: worker, payload: ["AWS_REGION": "us"])
        #expect(passed["AWS_SECRET_ACCESS_KEY"] == "s3cret" && passed["AWS_REGION"] == "us" && passed["OPQ_DEMO_DIR"] == "/d")
        #expect(passed["DB_PASSWORD"] == nil)

        let nobody = RunAsUser(name: "nobody", uid: 65534, gid: 65534, groups: [65534], home: "/nonexistent")
        let asUser = ChildEnvironment().build(worker: [:], user: nobody, run: ["OPQ_OP_ID": "b", "PATH": "/run"])
        #expect(asUser == ["PATH": "/run", "HOME": "/nonexistent", "USER": "nobody", "LOGNAME": "nobody", "OPQ_OP_ID": "b"])
        #expect(ChildEnvironment().build(worker: ["PATH": ""])["PATH"] == ChildEnvironment.defaultPath)
    }

    /// A secret in the worker's own environment does not reach a child unless --pass-env names it.
    @Test func workerSecretsReachChildrenOnlyWhenPassed() async throws {
        setenv("OPQ_LIMITS_TEST_SECRET", "s3cret", 1)
        defer { unsetenv("OPQ_LIMITS_TEST_SECRET") }
        let printEnv = ShellCommand.argv(["env"], env: ["FROM_PAYLOAD": "p"])

        let scrubbed = text(await run(printEnv, ShellHandler()).result)
        let names = Set(scrubbed.split(separator: "\n").compactMap { $0.split(separator: "=", maxSplits: 1).first.map(String.init) })
        #expect(!scrubbed.contains("s3cret"), "\(scrubbed)")
        #expect(names.contains("PATH") && names.contains("FROM_PAYLOAD") && names.contains("OPQ_TMPDIR"), "\(names)")
        let expected = Set(ChildEnvironment.kept + ["FROM_PAYLOAD", "PWD"])
        let unexpected = names.filter { !expected.contains($0) && !$0.hasPrefix("OPQ_") }
        #expect(unexpected.isEmpty, "only the documented variables: \(unexpected)")

        let passing = ShellHandler(limits: ShellLimits(environment: ChildEnvironment(passing: ["OPQ_LIMITS_TEST_*"])))
        #expect(text(await run(printEnv, passing).result).contains("OPQ_LIMITS_TEST_SECRET=s3cret"))
    }

    // MARK: --run-as

    @Test func runAsNeedsAnExistingUserAndRoot() throws {
        #expect(throws: LimitsError("--run-as no-such-user-opq: no such user")) { try RunAsUser.resolve("no-such-user-opq") }
        #expect(throws: LimitsError("--run-as nobody: only a worker running as root can run commands as another user "
                                    + "(this one runs as uid 4242); start it as root, or drop --run-as")) {
            try RunAsUser.resolve("nobody", euid: 4242)
        }
        let me = try RunAsUser.lookup("root")
        #expect(me.uid == 0 && me.gid == 0 && me.groups.contains(0))
        #expect(try RunAsUser.resolve("root", euid: 0) == me)
    }

    /// As root (as in CI): the child runs as `nobody`, with nobody's HOME, and can use its run's
    /// directory and inputs.
    @Test(.enabled(if: geteuid() == 0, "needs root")) func childrenRunAsTheGivenUser() async throws {
        let nobody = try RunAsUser.resolve("nobody")
        let handler = ShellHandler(limits: ShellLimits(runAs: nobody))
        let script = #"printf '%s %s %s ' "$(id -u)" "$(id -g)" "$HOME"; cat "$OPQ_INPUT_A"; echo x > "$OPQ_TMPDIR/out" && printf ' wrote'"#
        let result = await run(.script(script), handler, inputs: [.init(id: "a", result: bytes("input"))])
        #expect(result == .succeeded(bytes("\(nobody.uid) \(nobody.gid) \(nobody.home) input wrote")), "\(result)")
        #expect(await run(.argv(["id", "-u"]), handler) == .succeeded(bytes("\(nobody.uid)\n")))
    }
}
