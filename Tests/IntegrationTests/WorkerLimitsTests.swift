import ClusterTestSupport
import Foundation
import Testing
import WireProtocol
import ZeroMQ

/// A real `opworker` with limits (docs/HANDLERS.md, "What a worker runs"): it announces only the
/// kinds it allows, and an op of another kind that still arrives fails with the reason. A stand-in
/// coordinator dispatches it, since a real one never sends a worker a kind it did not announce.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct WorkerLimitsTests {
    @Test func aWorkerWithoutShellFailsAShellOpWithTheReason() throws {
        let ctx = try Context()
        let standIn = try StandIn(ctx)
        defer { standIn.close() }
        let worker = try Spawned(Binaries.path("opworker"), ["--connect", standIn.endpoint, "--name", "limited", "--slots", "1",
                                                             "--prefetch", "0", "--allow-kinds", "echo,noop"], env: [:])
        defer { _ = worker.finish(timeout: 0) }
        do {
            let hello = try standIn.register()
            #expect(hello.kinds == ["echo", "noop"], "only the allowed kinds are announced")
            #expect(try standIn.expectCredit() == 1)
            standIn.dispatch([WorkerReRegistrationTests.record("sh", kind: "shell", payload: WorkerReRegistrationTests.shell("echo ran"))])
            var finished: WireFinished?
            try standIn.serve(until: "FINISHED for the shell op", timeout: 20, keepAlive: true) { message in
                if case .finished(let f) = message { finished = f }
                return finished != nil
            }
            let record = try #require(finished?.records.first)
            #expect(record.opID == "sh" && finished?.records.count == 1)
            #expect(record.failed == "kind 'shell' is not allowed on this worker (opworker --allow-kinds)", "\(record)")
            #expect(worker.output("stderr").contains("allowed kinds: echo, noop — the kinds given by --allow-kinds"))
        } catch {
            Issue.record("opworker's log:\n\(worker.output("stderr"))")
            throw error
        }
    }

    /// A limit that cannot be honoured stops the worker at start, saying why.
    @Test func aWorkerRefusesToStartWithAnImpossibleLimit() throws {
        for (args, message) in [(["--run-as", "no-such-user-opq"], "--run-as no-such-user-opq: no such user"),
                                (["--shell-allow", "bin/tool"], "--shell-allow bin/tool: not an absolute path"),
                                (["--allow-kinds", "shel"], "--allow-kinds: this worker has no kind 'shel'")] {
            let run = try CommandLineTests.run(Binaries.path("opworker"), ["--connect", "tcp://127.0.0.1:1"] + args, timeout: 20)
            #expect(run.status != 0 && run.stderr.contains(message), "\(args): \(run.status) \(run.stderr)")
        }
    }

    /// An endpoint libzmq would refuse with "Invalid argument" or retry for ever is refused at start,
    /// saying what is wrong; HOST:PORT is taken as tcp://HOST:PORT, as opctl takes it.
    @Test func aWorkerRefusesAnEndpointItCannotConnectTo() throws {
        for (args, env, message) in [
            (["--connect", "tcp://127.0.0.1"], [String: String](), "--connect: 'tcp://127.0.0.1' has no port"),
            (["--connect", "tcp://127.0.0.1:99999"], [:], "port 99999 in tcp://127.0.0.1:99999 is out of range"),
            (["--connect", "tcp://127.0.0.1:*"], [:], "'*' in tcp://127.0.0.1:* is not a port"),
            ([], ["OPCOORD": "udp://head:7600"], "$OPCOORD: unknown transport 'udp'"),
        ] {
            let run = try CommandLineTests.run(Binaries.path("opworker"), args, env: env, timeout: 20)
            #expect(run.status != 0 && run.stderr.contains(message), "\(args) \(env): \(run.status) \(run.stderr)")
        }
        let opctl = try CommandLineTests.run(Binaries.path("opctl"), ["--coordinator", "tcp://127.0.0.1:70000", "runs"], timeout: 20)
        #expect(opctl.status == 64 && opctl.stderr.contains("port 70000 in tcp://127.0.0.1:70000 is out of range"),
                "opctl: \(opctl.status) \(opctl.stderr)")
    }
}
