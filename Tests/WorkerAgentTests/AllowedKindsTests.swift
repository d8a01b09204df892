import ArgumentParser
import Logging
import Testing
@testable import WorkerAgent
import WorkerRuntime
import ZeroMQ

/// opworker --allow-kinds and its default: shell is refused unless the coordinator is on loopback.
struct AllowedKindsTests {
    static let builtins = ["burn", "echo", "fail", "noop", "shell", "sleep"]

    @Test(arguments: ["tcp://127.0.0.1:7600", "tcp://127.0.0.2:7600", "tcp://localhost:7600", "tcp://[::1]:7600",
                      "TCP://LOCALHOST:1", "ipc:///tmp/opq.sock", "inproc://coordinator", "tcp://10.0.0.1;127.0.0.1:7600"])
    func loopbackEndpointsAllowEverything(endpoint: String) throws {
        #expect(EndpointScope.isLoopback(endpoint))
        let kinds = try AllowedKinds.decide(nil, endpoint: endpoint, registered: Self.builtins)
        #expect(kinds.allowed == Self.builtins && kinds.refused.isEmpty)
    }

    @Test(arguments: ["tcp://10.0.0.5:7600", "tcp://head:7600", "tcp://198.18.0.2:7600", "tcp://[2001:db8::1]:7600",
                      "tcp://127.0.0.1;10.0.0.5:7600", "tcp://127.0.0.1.example.com:7600", "tcp://localhost.evil:7600",
                      "ws://127.0.0.1:7600/x", "pgm://eth0;239.192.1.1:5555"])
    func otherEndpointsRefuseShellByDefault(endpoint: String) throws {
        #expect(!EndpointScope.isLoopback(endpoint))
        let kinds = try AllowedKinds.decide(nil, endpoint: endpoint, registered: Self.builtins)
        #expect(kinds.allowed == ["burn", "echo", "fail", "noop", "sleep"])
        #expect(kinds.refused == ["shell"])
        #expect(kinds.why.contains("not on loopback") && kinds.why.contains("--allow-kinds all"), "\(kinds.why)")
        let withoutShell = try AllowedKinds.decide(nil, endpoint: endpoint, registered: ["echo", "resize"])
        #expect(withoutShell.allowed == ["echo", "resize"] && withoutShell.refused.isEmpty, "only shell is refused by default")
    }

    @Test func anExplicitListDecides() throws {
        let remote = "tcp://10.0.0.5:7600"
        #expect(try AllowedKinds.decide("all", endpoint: remote, registered: Self.builtins).allowed == Self.builtins)
        let some = try AllowedKinds.decide("shell, echo", endpoint: remote, registered: Self.builtins)
        #expect(some.allowed == ["echo", "shell"] && some.refused == ["burn", "fail", "noop", "sleep"])
        let local = try AllowedKinds.decide("noop", endpoint: "tcp://127.0.0.1:7600", registered: Self.builtins)
        #expect(local.allowed == ["noop"] && local.refused.contains("shell"), "a list limits on loopback too")
        #expect(throws: LimitsError("--allow-kinds: this worker has no kind 'shel' (it has: burn, echo, fail, noop, shell, sleep; or 'all')")) {
            try AllowedKinds.decide("echo,shel", endpoint: remote, registered: Self.builtins)
        }
        #expect(throws: LimitsError("--allow-kinds needs kinds (comma-separated) or 'all'")) {
            try AllowedKinds.decide(" , ", endpoint: remote, registered: Self.builtins)
        }
    }

    /// The options as opworker applies them to its registry.
    @Test func optionsLimitTheRegistry() throws {
        let logger = Logger(label: "test")
        let remote = try WorkerOptions.parse(["--connect", "tcp://10.0.0.5:7600"]).limit(HandlerRegistry(), logger: logger)
        #expect(remote.kinds == ["burn", "echo", "fail", "noop", "sleep"])
        #expect(remote.refusal(for: "shell") == "kind 'shell' is not allowed on this worker (opworker --allow-kinds)")

        let allowed = try WorkerOptions.parse(["--connect", "tcp://10.0.0.5:7600", "--allow-kinds", "shell,noop",
                                               "--pass-env", "AWS_*", "--shell-allow", "/usr/bin/"]).limit(HandlerRegistry(), logger: logger)
        #expect(allowed.kinds == ["noop", "shell"])
        let shell = try #require(allowed.handler(for: "shell") as? ShellHandler)
        #expect(shell.limits.environment.passed == ["AWS_*"])
        #expect(shell.limits.executables != nil)

        #expect(try WorkerOptions.parse(["--connect", "tcp://127.0.0.1:7600"]).limit(HandlerRegistry(), logger: logger).kinds
                    == Self.builtins)
        #expect(throws: LimitsError("--run-as no-such-user-opq: no such user")) {
            try WorkerOptions.parse(["--run-as", "no-such-user-opq"]).limit(HandlerRegistry(), logger: logger)
        }
    }
}
