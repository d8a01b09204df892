import ClusterTestSupport
import Foundation
import Testing

/// cluster/: the deployment recipes' static checks, and a coordinator with 3 worker hosts in network
/// namespaces talking over real TCP between distinct 198.18.0.0/15 addresses.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ClusterScriptsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    /// The scripts exit 77 when network namespaces cannot be made (not root, no veth support).
    static let skipped: Int32 = 77

    @Test func deploymentRecipesPassTheirStaticChecks() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/check.sh"], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("0 failed"), "\(run.stdout)")
    }

    @Test func slurmScriptRunsAGraphWithStandInSrun() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/slurm/test-local.sh", Binaries.directory], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
    }

    @Test func coordinatorAndThreeWorkerHostsInNetworkNamespaces() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/smoke.sh", Binaries.directory],
                                           env: ["OPQ_NETNS_PREFIX": "opqt", "OPQ_NETNS_STATE": NSTemporaryDirectory() + "opq-netns-test"],
                                           timeout: 150)
        if run.status == Self.skipped {
            print("skipped: network namespaces are not available here: \(run.stdout)\(run.stderr)")
            return
        }
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("200 operations succeeded on 3 workers"), "\(run.stdout)")
    }

    /// Keys over real TCP (cluster/netns/security.sh): strangers without a key or with an unknown one are
    /// refused quickly and nothing they submit runs; roles and queue scopes hold; a revoked worker is
    /// dropped within heartbeat + 1 s; a capture on the coordinator's veth holds no payload with keys
    /// and does with --insecure (the control). The script prints a PASS or FAIL line per check.
    @Test func strangersAreRefusedRolesHoldAndNothingIsReadableOnTheWire() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/security.sh", Binaries.directory],
                                           env: ["OPQ_NETNS_PREFIX": "opqk", "OPQ_NETNS_BASE": "120",
                                                 "OPQ_NETNS_STATE": NSTemporaryDirectory() + "opq-netns-security"],
                                           timeout: 150)
        if run.status == Self.skipped {
            print("skipped: network namespaces are not available here: \(run.stdout)\(run.stderr)")
            return
        }
        print(run.stdout.split(separator: "\n").filter { $0.hasPrefix("PASS") || $0.hasPrefix("FAIL") }.joined(separator: "\n"))
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: netns security"), "\(run.stdout)")
        #expect(!run.stdout.contains("FAIL:"), "\(run.stdout)")
    }

    /// A3 across a real network path: kill -9 one worker, freeze another past the liveness bound, cut a
    /// third host's link for 10 s, all during a run; every op succeeds and each failure is detected within
    /// the liveness bound + 1 s (the script checks both and prints the figures). Then A5: the coordinator
    /// killed with SIGKILL 10 times during a 20,000-op shell run and restarted on its state directory;
    /// every op succeeds exactly once (crash.sh).
    @Test func failuresOnRealTCPPathsAreDetectedWithinTheBoundAndNothingIsLost() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/faults.sh", Binaries.directory],
                                           env: ["OPQ_NETNS_PREFIX": "opqf", "OPQ_NETNS_BASE": "40",
                                                 "OPQ_NETNS_STATE": NSTemporaryDirectory() + "opq-netns-faults"],
                                           timeout: 300)
        if run.status == Self.skipped {
            print("skipped: network namespaces are not available here: \(run.stdout)\(run.stderr)")
            return
        }
        print(run.stdout)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: faults"), "\(run.stdout)")
        #expect(run.stdout.contains("PASS: coordinator crashes"), "\(run.stdout)")
    }

    /// The same fault run where namespaces are impossible: processes on loopback, kill -9 and SIGSTOP
    /// (no link to cut). Forced here, so it is tested on machines that do have namespaces too.
    @Test func failuresOnLoopbackAreDetectedWithinTheBoundAndNothingIsLost() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/faults.sh", Binaries.directory],
                                           env: ["OPQ_FAULTS_TARGET": "loopback", "OPQ_NETNS_PREFIX": "opqb",
                                                 "OPQ_NETNS_STATE": NSTemporaryDirectory() + "opq-loopback-faults"],
                                           timeout: 300)
        print(run.stdout)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: faults"), "\(run.stdout)")
        #expect(run.stdout.contains("SIGSTOP 5 s") && !run.stdout.contains("link cut"), "\(run.stdout)")
    }

    /// Issue 29's failover on netns hosts (cluster/netns/failover.sh): two heads with `--ha` and
    /// `--replication sync` on an etcd host, two worker hosts given both endpoints; during a layered run
    /// of short shell ops the leader is SIGKILLed 5 times (each time restarted as a standby) and its link
    /// cut once (it stops serving, the other is elected, and back on the network it follows, not serves).
    /// Every op succeeds with exactly one run, an `opctl wait` started before the faults sees the run
    /// finish; the script prints the takeover p50/max. CI runs 4,000 ops
    /// (the full 20,000 is the script's default; docs/BENCHMARKS.md has its figures).
    @Test func theLeaderKilledOrCutOffIsReplacedAndEveryOpRunsOnce() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/failover.sh", Binaries.directory],
                                           env: ["OPQ_NETNS_PREFIX": "opqha", "OPQ_NETNS_BASE": "160",
                                                 "OPQ_NETNS_STATE": NSTemporaryDirectory() + "opq-netns-failover",
                                                 "OPQ_FAILOVER_OPS": "4000", "OPQ_FAILOVER_KILLS": "5", "OPQ_FAILOVER_CUTS": "1"],
                                           timeout: 170)
        print(run.stdout.split(separator: "\n").filter { !$0.hasPrefix("20") }.joined(separator: "\n"))
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: failover"), "\(run.stdout)")
        #expect(run.stdout.contains("over 5 failovers"), "\(run.stdout)")
        // With namespaces, the cut happened; without, the script said it fell back to loopback.
        #expect(run.stdout.contains("link cut: ") || run.stdout.contains("loopback processes instead"), "\(run.stdout)")
    }

    /// The same where namespaces are impossible: both heads, etcd and the workers on loopback, kills only.
    /// Forced here, so the fallback is tested on machines that do have namespaces too.
    @Test func theLeaderKilledOnLoopbackIsReplacedAndEveryOpRunsOnce() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/failover.sh", Binaries.directory],
                                           env: ["OPQ_FAILOVER_TARGET": "loopback", "OPQ_FAILOVER_OPS": "1500", "OPQ_FAILOVER_KILLS": "3"],
                                           timeout: 120)
        print(run.stdout.split(separator: "\n").filter { !$0.hasPrefix("20") }.joined(separator: "\n"))
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: failover") && run.stdout.contains("over 3 failovers"), "\(run.stdout)")
        #expect(!run.stdout.contains("link cut:"), "\(run.stdout)")
    }

    /// Issue 14's soak: a normal 20,000-op run beside garbage frames, HELLO spam, a greedy worker and
    /// oversized requests; the run finishes exactly once and the coordinator's RSS and log stay bounded.
    @Test func aNormalRunFinishesExactlyOnceAmongHostilePeers() throws {
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/cluster/netns/hostile.sh", Binaries.directory],
                                           env: ["OPQ_HOSTILE_SECONDS": "15"], timeout: 200)
        print(run.stdout)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: hostile"), "\(run.stdout)")
    }

    /// scripts/loadtest across the netns hosts (quick sizes): every workload passes its own checks.
    @Test func loadTestRunsAcrossNetworkNamespaceHosts() throws {
        let out = NSTemporaryDirectory() + "opq-loadtest-netns"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try CommandLineTests.run("/bin/bash", [Self.root + "/scripts/loadtest", "--target", "netns", "--quick",
                                                         "--bin", Binaries.directory, "--out", out],
                                           env: ["OPQ_NETNS_PREFIX": "opql", "OPQ_NETNS_BASE": "80",
                                                 "OPQ_NETNS_STATE": NSTemporaryDirectory() + "opq-netns-loadtest"],
                                           timeout: 170)
        if run.status == Self.skipped {
            print("skipped: network namespaces are not available here: \(run.stdout)\(run.stderr)")
            return
        }
        print(run.stdout.split(separator: "\n").filter { $0.hasPrefix("|") }.joined(separator: "\n"))
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("PASS: loadtest"), "\(run.stdout)")
        for w in ["independent", "chain", "layered", "fan", "priority", "sleep", "burn", "cancel", "gantt"] {
            #expect(FileManager.default.fileExists(atPath: out + "/\(w).json"), "no report for \(w)")
        }
    }
}
