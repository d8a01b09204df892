import ClusterTestSupport
import Foundation
import Testing

/// The CLI edges of issue 25, finding 8: where options go, a wrong port, exit statuses, how fast
/// opcoord stops.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CommandLineEdgeTests {
    let opctl = Binaries.path("opctl")

    /// The connection options work before the subcommand as after it; an unknown operation is "not
    /// found" (exit 5), not "unreachable" (exit 3).
    @Test func connectionOptionsBeforeTheSubcommandAndNotFoundHasItsOwnStatus() throws {
        let c = try LocalCluster(journal: false)
        defer { c.stop() }
        #expect(try c.submit([op("x")], run: "r").accepted)
        let hostPort = String(c.endpoint.dropFirst("tcp://".count))
        // No $OPCOORD: only the option can find this coordinator.
        let runs = try CommandLineTests.run(opctl, ["--coordinator", c.endpoint, "runs"], timeout: 30)
        #expect(runs.status == 0, "\(runs.stderr)")
        #expect(runs.stdout.contains("r"), "\(runs.stdout)")
        let joined = try CommandLineTests.run(opctl, ["--coordinator=\(hostPort)", "--request-timeout", "5", "status", "r/x"], timeout: 30)
        #expect(joined.status == 0, "\(joined.stderr)")
        // One given after the subcommand wins.
        let both = try CommandLineTests.run(opctl, ["--coordinator", "tcp://127.0.0.1:1", "runs", "--coordinator", c.endpoint], timeout: 30)
        #expect(both.status == 0, "\(both.stderr)")

        let unknown = try CommandLineTests.run(opctl, ["--coordinator", c.endpoint, "wait", "nope", "--run", "r", "--timeout", "5"], timeout: 30)
        #expect(unknown.status == 5, "\(unknown.stdout)\(unknown.stderr)")
        #expect(unknown.stderr.contains("unknown operation(s): r/nope"), "\(unknown.stderr)")
        let absent = try CommandLineTests.run(opctl, ["--coordinator", "tcp://127.0.0.1:1", "--request-timeout", "1", "wait", "nope"], timeout: 30)
        #expect(absent.status == 3, "\(absent.stderr)")
        let help = try CommandLineTests.run(opctl, ["--help"], timeout: 30)
        #expect(help.stdout.contains("5 the coordinator does not know"), "\(help.stdout)")
    }

    /// The dashboard's port accepts TCP but never answers ZeroMQ's greeting: said within about a second.
    @Test func theHTTPPortIsSaidToBeNoCoordinatorAtOnce() throws {
        let c = try LocalCluster(coordinatorArgs: ["--http", "127.0.0.1:0"], journal: false)
        defer { c.stop() }
        let http = try c.httpBase()
        let started = ContinuousClock.now
        let hostPort = String(http.dropFirst("http://".count))
        let r = try CommandLineTests.run(opctl, ["status", "--coordinator", hostPort], timeout: 30)
        let took = ContinuousClock.now - started
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("tcp://\(hostPort): not an opqueue coordinator (is it the HTTP port? the coordinator's default is 7600)"),
                "\(r.stderr)")
        #expect(!r.stderr.contains("could not connect"), "\(r.stderr)")
        #expect(took < .seconds(3), "took \(took)")
        let waited = try CommandLineTests.run(opctl, ["wait", "x", "--coordinator", hostPort], timeout: 30)
        #expect(waited.status == 3 && waited.stderr.contains("not an opqueue coordinator"), "\(waited.stderr)")
    }

    /// SIGTERM stops opcoord (HTTP side on, journal on) in under a second (it took 5 s, then 1 s), and nothing is lost.
    @Test func sigtermStopsTheCoordinatorQuicklyAndKeepsEverything() throws {
        let c = try LocalCluster(coordinatorArgs: ["--http", "127.0.0.1:0"])
        defer { c.stop() }
        _ = try c.httpBase()
        try c.startWorker("a", slots: 1)
        #expect(try c.submit([op("x"), op("y", after: ["x"])], run: "r").accepted)
        _ = try c.wait(["r/y"])
        let pid = c.coordinator.processIdentifier
        let started = ContinuousClock.now
        kill(pid, SIGTERM)
        try waitUntil("opcoord to stop", timeout: 10, interval: .milliseconds(5)) { !c.coordinator.isRunning }
        let took = ContinuousClock.now - started
        #expect(took < .seconds(1), "took \(took)\n\(c.logs())")
        #expect(c.coordinator.terminationStatus == 0)
        #expect(try c.restartCoordinator() == 0)
        let after = try c.status(["r/x", "r/y"])
        #expect(after["x"]?.isSucceeded == true && after["y"]?.isSucceeded == true, "\(after)")
    }
}
