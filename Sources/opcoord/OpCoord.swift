import ArgumentParser
import Coordinator
import Dispatch
import Foundation
import HTTPFront
import Lifecycle
import Logging
import ZeroMQ

@main
struct OpCoord: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opcoord",
        abstract: "The opqueue coordinator: holds the dependency graph and the queues, dispatches to workers.",
        discussion: """
            Workers (opworker --connect) and clients (opctl, the Swift API) connect to the one endpoint. \
            SIGINT or SIGTERM stops it gracefully: workers are told to reconnect, and it exits 0.

            Everything it accepts is written to a journal in its state directory before it is acknowledged, \
            so a restart (also after kill -9 or a power cut) goes on where it stopped: --state-dir, default \
            $XDG_STATE_HOME/opqueue/<endpoint> (~/.local/state/opqueue/<endpoint>); --ephemeral keeps \
            nothing. Workers keep running their operations while it is away and hand them back when it \
            returns (docs/DEPLOY.md, "State directory").

            Off loopback it needs keys: --key (its secret key file, from 'opctl keys new') and --allow (one \
            line per client or worker key: PUBLIC-KEY NAME ROLES [SCOPE…]). Every connection is then \
            encrypted and authenticated with CurveZMQ, and each request is checked against its key's \
            roles. SIGHUP (or editing the file) reloads the allow file. --insecure runs off loopback \
            without keys (docs/DEPLOY.md, "Keys and roles").
            """)

    @Option(help: "ZeroMQ endpoint to bind, e.g. tcp://0.0.0.0:7600 (a port of * picks a free one).")
    var bind: String = "tcp://127.0.0.1:7600"

    @Option(help: "Application heartbeat interval announced to workers, in milliseconds.")
    var heartbeatMs: UInt32 = 1000

    @Option(help: "Missed heartbeats after which a worker is declared lost and its operations re-queued.")
    var liveness: UInt32 = 3

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: "Write the bound endpoint to this file once listening (for scripts using port *).")
    var endpointFile: String?

    @Option(help: "Most operations a worker may hold beyond its slots (its --prefetch is capped at this).")
    var maxPrefetch: Int = 256

    @Option(help: "Seconds an operation may wait on a worker without starting before it is taken back and dispatched again (0 = never).")
    var startTimeout: Double = 120

    @Option(help: "How long a finished run is kept before it is evicted: e.g. 24h, 30m, 90s, 500ms.")
    var retain: String = "24h"

    @Option(help: "Most finished runs kept; beyond it the oldest finished run is evicted.")
    var retainRuns: Int = 10_000

    @Option(help: "Memory for finished operations' results, error texts and metadata (bytes, e.g. 256MiB or 4GiB, or a share of RAM such as 25%). Beyond it the oldest finished runs lose their results first, then are evicted whole; status and runs say so. Output tails have their own --log-store-bytes.")
    var retainBytes: String = ByteSize.defaultRetain

    @Option(help: "Bytes of operations' output (stdout/stderr tails of each attempt, 'opctl logs') kept in memory; the oldest attempts are evicted first; 0 keeps none. Not journalled.")
    var logStoreBytes: Int = 64 << 20

    @Option(help: "Forget a client that has been silent this long and is owed no reply (e.g. 60s); it is a new client if it speaks again.")
    var clientIdle: String = "60s"

    @Option(help: "Bytes the coordinator holds for one client that does not read what it is sent (beyond the socket's 16 messages); past it the client's WATCH stream is ended with 'watch too slow: resubscribe'. All slow clients together hold at most 8 times this.")
    var clientOutputBytes: Int = 8 << 20

    @Option(help: "Directory of the journal and snapshots (default: $XDG_STATE_HOME/opqueue/<endpoint>, else ~/.local/state/opqueue/<endpoint>).")
    var stateDir: String?

    @Flag(help: "Keep no state on disk: a restart forgets every operation (benchmarks, throwaway clusters).")
    var ephemeral = false

    @Option(help: ArgumentHelp("Journal bytes since the last snapshot that trigger the next (and twice the last snapshot's size); for tests.",
                               visibility: .hidden))
    var snapshotBytes: Int = 64 << 20

    @Option(help: ArgumentHelp("Milliseconds the loop holds after each SUBMIT to a run named stall*, standing in for a huge input; for tests.",
                               visibility: .hidden))
    var testStallSubmitMs: Int = 0

    @Flag(help: "If the journal is damaged or has lost acknowledged records, recover the records before the damage and move the rest aside (state-dir/salvaged-<time>/) instead of refusing to start; what was lost is logged (ACKNOWLEDGED RECORDS LOST) with the runs it touched, as far as known.")
    var salvage = false

    @Option(help: "Secret key file of the coordinator (from 'opctl keys new PATH'); turns on CURVE. Needs --allow.")
    var key: String?

    @Option(help: "Allow file: one line per key, 'PUBLIC-KEY NAME ROLES [SCOPE…]' (roles: worker, submit, view, admin, coordinator). Reloaded on SIGHUP and on change.")
    var allow: String?

    @Flag(help: "Listen off loopback without keys: anyone who reaches the port can run commands on every worker. Logged, and shown by status.")
    var insecure = false

    @Option(help: "HOST:PORT of the read-only dashboard, JSON and /metrics (docs/HTTP.md), or 'off'. The default, 127.0.0.1:7601, is skipped with a warning when that port is taken.")
    var http: String?

    @Option(help: "File holding the token every HTTP request must carry (Authorization: Bearer TOKEN); required when --http is off loopback. Mode 0600.")
    var httpTokenFile: String?

    @Option(help: ArgumentHelp("A name the HTTP side may be reached by besides its address (repeatable): requests whose Host names anything else are refused (421), so a foreign site cannot read it through DNS rebinding.",
                               valueName: "NAME"))
    var httpAllowHost: [String] = []

    @OptionGroup(title: "High availability (issue 29; docs/DEPLOY.md)")
    var haOptions: HAOptions
    @Option(help: "Start as a hot standby of the coordinator at this endpoint (e.g. tcp://head-a:7600): follow its journal into --state-dir and serve nothing until promoted ('opctl ha promote', or an election). With keys, the leader's allow file must give this coordinator's key the 'coordinator' role.")
    var follow: String?

    @Option(help: "With --follow: once promoted, also listen on this endpoint (a floating address, or the old leader's own on this host), so workers and clients that know only that address reach the new leader and workers reattach what they run.")
    var promoteBind: String?

    @Option(help: "This standby's name in the leader's status and logs (default: the host name and --bind).")
    var standbyName: String?

    @Option(help: "With --follow and --key: the leader's public key (a file or the key itself). Default: this coordinator's own public key (a group sharing one key pair).")
    var leaderKey: String?

    @Option(help: "sync: a client's acknowledgement also waits until a standby in sync holds the records on its disk (when a standby is connected); async: acknowledged on this disk alone, standbys follow behind.")
    var replication: String = "sync"

    @Option(help: "In sync mode, milliseconds an acknowledgement waits for a standby before the coordinator stops waiting for it (it is dropped out of sync, logged, counted) until it has caught up again.")
    var replicationTimeoutMs: Int = 1000

    func validate() throws {
        if follow != nil && ephemeral { throw ValidationError("--follow writes the leader's journal to a state directory; --ephemeral has none") }
        if follow != nil && salvage { throw ValidationError("--follow and --salvage exclude each other: a standby takes its state from the leader") }
        if let follow, !(follow.hasPrefix("tcp://") || follow.hasPrefix("ipc://") || follow.hasPrefix("inproc://")) {
            throw ValidationError("--follow '\(follow)' is not a ZeroMQ endpoint (tcp://HOST:PORT)")
        }
        if follow != nil && haOptions.ha != nil {
            throw ValidationError("--follow and --ha exclude each other: with --ha a coordinator that does not lead follows the elected leader by itself")
        }
        let standby = follow != nil || haOptions.ha != nil
        if leaderKey != nil && (!standby || key == nil) { throw ValidationError("--leader-key is for a standby with keys: it needs --follow (or --ha) and --key") }
        if promoteBind != nil && follow == nil { throw ValidationError("--promote-bind is for a standby: it needs --follow") }
        if standbyName != nil && !standby { throw ValidationError("--standby-name names a standby: it needs --follow (or --ha)") }
        guard ReplicationConfig.Mode(rawValue: replication) != nil else {
            throw ValidationError("--replication '\(replication)' is not sync or async")
        }
        guard replicationTimeoutMs >= 1 else { throw ValidationError("--replication-timeout-ms must be ≥ 1") }
        // First: a bind that cannot work is not a matter of keys.
        if let problem = EndpointScope.bindProblem(bind) { throw ValidationError("--bind: \(problem)") }
        if (key == nil) != (allow == nil) {
            throw ValidationError("--key and --allow go together: the key proves who the coordinator is, the allow file says who may connect")
        }
        if insecure && key != nil { throw ValidationError("--insecure and --key exclude each other: choose one") }
        if key == nil && !insecure && !EndpointScope.isLoopback(bind) {
            throw ValidationError("""
                refusing to listen on \(bind) without keys: anyone who reaches that port could run commands on every worker.
                  Create keys:  opctl keys new coordinator.key   (and one per worker and user: opctl keys new alice.key)
                  Allow them:   a file with one line per key, e.g. "$(cat alice.key.pub) alice submit team-a/*"
                  Then:         opcoord --bind \(bind) --key coordinator.key --allow allow.txt
                Or pass --insecure to run without keys on a network you trust (docs/DEPLOY.md, "Keys and roles").
                """)
        }
        if ephemeral && stateDir != nil { throw ValidationError("--ephemeral and --state-dir exclude each other: choose one") }
        if ephemeral && salvage { throw ValidationError("--salvage recovers a state directory; --ephemeral has none") }
        if stateDir?.isEmpty == true { throw ValidationError("--state-dir needs a directory") }
        if let http, http != "off" {
            guard let (host, _) = HTTPSideConfig.parse(http) else {
                throw ValidationError("--http '\(http)' is not HOST:PORT (e.g. 127.0.0.1:7601, 0.0.0.0:7601) or 'off'")
            }
            if httpTokenFile == nil && !EndpointScope.isLoopback("tcp://\(host.contains(":") ? "[\(host)]" : host):1") {
                throw ValidationError("""
                    --http \(http) is off loopback: anyone who reaches it could read every operation, result and log.
                    Give --http-token-file FILE (a secret; requests carry Authorization: Bearer TOKEN), or bind 127.0.0.1.
                    """)
            }
        }
        for name in httpAllowHost where name.isEmpty || name.contains(where: { $0 == "/" || $0 == " " || $0 == ":" && !name.hasPrefix("[") }) {
            throw ValidationError("--http-allow-host '\(name)' is not a host name: give a name such as head.example.org (no scheme, no port)")
        }
        if !httpAllowHost.isEmpty && http == "off" { throw ValidationError("--http-allow-host is for the HTTP side; --http off has none") }
        if httpTokenFile != nil && http == "off" { throw ValidationError("--http-token-file protects the HTTP side; --http off has none") }
        guard snapshotBytes >= 1 else { throw ValidationError("--snapshot-bytes must be ≥ 1") }
        // The default directory is named after the endpoint; with a port chosen at random it would be
        // one directory shared by every such coordinator.
        if stateDir == nil && !ephemeral && bind.hasSuffix(":*") {
            throw ValidationError("--bind \(bind) picks a free port, so there is no default state directory for it: give --state-dir DIR (or --ephemeral to keep nothing)")
        }
        guard RetentionPeriod.micros(clientIdle) != nil else {
            throw ValidationError("--client-idle '\(clientIdle)' is not a duration: give a number with h, m, s or ms (e.g. 60s)")
        }
        guard let kept = RetentionPeriod.micros(retain) else {
            throw ValidationError("--retain '\(retain)' is not a duration: give a number with h, m, s or ms (e.g. 24h, 90s)")
        }
        // A run evicted as it finishes could not be read at all: its waiters and watchers ask for the
        // results after the FINISHED they were told of.
        guard kept >= 1_000_000 else { throw ValidationError("--retain must be at least 1s, so a finished run can still be read") }
        guard clientOutputBytes >= 64 << 10 else { throw ValidationError("--client-output-bytes must be at least 65536 (64 KiB)") }
        guard logStoreBytes >= 0 else { throw ValidationError("--log-store-bytes must be ≥ 0") }
        guard ByteSize.bytes(retainBytes) != nil else {
            throw ValidationError("--retain-bytes '\(retainBytes)' is not a size: give bytes, a number with KiB, MiB or GiB (e.g. 256MiB), or a share of RAM (e.g. 25%)")
        }
        guard retainRuns >= 1 else { throw ValidationError("--retain-runs must be ≥ 1, so a finished run can still be read") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard heartbeatMs >= 10 else { throw ValidationError("--heartbeat-ms must be ≥ 10") }
        guard liveness >= 1 else { throw ValidationError("--liveness must be ≥ 1") }
        guard maxPrefetch >= 0 else { throw ValidationError("--max-prefetch must be ≥ 0") }
        guard startTimeout >= 0, startTimeout.isFinite else { throw ValidationError("--start-timeout must be ≥ 0 seconds") }
    }

    func run() throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "opcoord")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        CoordinatorServer.raiseOpenFileLimit(logger: logger)
        var config = CoordinatorConfig(bind: bind)
        config.heartbeatIntervalMs = heartbeatMs
        config.liveness = liveness
        config.maxPrefetch = maxPrefetch
        config.startTimeoutMs = Int64(startTimeout * 1000)
        config.retainMicros = RetentionPeriod.micros(retain)!
        config.retainRuns = retainRuns
        config.retainBytes = ByteSize.bytes(retainBytes)!
        config.logStoreBytes = logStoreBytes
        config.clientIdleMicros = RetentionPeriod.micros(clientIdle)!
        config.clientOutputBytes = clientOutputBytes
        config.clientOutputTotalBytes = clientOutputBytes.multipliedReportingOverflow(by: 8).overflow ? .max : clientOutputBytes * 8
        config.stateDirectory = ephemeral ? nil : (stateDir ?? Self.defaultStateDirectory(bind: bind))
        config.salvage = salvage
        config.snapshotMinBytes = snapshotBytes
        config.testStallAfterSubmitMicros = Int64(max(0, testStallSubmitMs)) * 1000
        if http != "off" {
            config.internalEndpoint = "inproc://opcoord-http"
            config.metricsBoard = MetricsBoard()
        }
        if haOptions.ha != nil { config.leadership = LeadershipBox() }
        config.replication.mode = ReplicationConfig.Mode(rawValue: replication)!
        config.replication.syncTimeoutMicros = Int64(replicationTimeoutMs) * 1000
        if let follow {
            config.replication.promoteBind = promoteBind
            config.replication.follow = FollowConfig(leader: follow, name: standbyName ?? "\(ProcessInfo.processInfo.hostName) \(bind)")
        }
        // With --ha and a journal, a coordinator that does not lead follows the elected leader's journal (a
        // hot standby), so that winning needs no recovery; the leader is filled in by the election.
        if haOptions.ha != nil && !ephemeral {
            config.replication.electedFollow = FollowConfig(leader: "", name: standbyName ?? haOptions.advertise ?? "\(ProcessInfo.processInfo.hostName) \(bind)")
        }
        if let key, let allow {
            do {
                let pair = try KeyFile.loadSecret(key)
                config.access = try AccessControl(keys: pair, allowPath: allow, logger: logger)
                if config.replication.follow != nil || config.replication.electedFollow != nil {
                    let server = try leaderKey.map { try KeyFile.loadPublic($0) } ?? pair.publicKeyValue
                    config.replication.follow?.curve = CurveClientKeys(keys: pair, server: server)
                    config.replication.electedFollow?.curve = CurveClientKeys(keys: pair, server: server)
                }
            } catch {
                logger.critical("cannot start: \(error)")
                throw ExitCode.failure
            }
        } else if insecure {
            config.insecure = true
            logger.warning("--insecure: listening on \(bind) without keys; anyone who reaches it can submit shell commands to every worker, register as a worker and read results")
        }
        // The HTTP side's token is read before anything starts: a missing or readable-by-others file
        // stops opcoord whatever --http says, rather than leaving the dashboard off or open.
        let httpToken: String?
        do { httpToken = try httpTokenFile.map { try KeyFile.loadToken($0) } } catch {
            logger.critical("cannot start: --http-token-file: \(error)")
            throw ExitCode.failure
        }
        let server: CoordinatorServer
        do {
            server = try CoordinatorServer(config: config, logger: logger)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        // The HTTP side stops first, while the loop still answers its last questions: its in-process
        // sockets must be closed before the loop's ZeroMQ context ends, else ending it waits them out
        // (seconds) before the journal is closed.
        let election: HAElection?
        do { election = try haOptions.ha.map { _ in try HAElection(options: haOptions, server: server, logger: logger) } } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        let web = HTTPSideSlot()
        let signals = StopSignals(stop: { _ in web.stop(); server.stop() }, reload: { server.reloadAccess() })
        var webFailed = false
        do {
            try server.run(ready: { endpoint in
                let started: HTTPSide?
                (started, webFailed) = startHTTP(server, token: httpToken, logger: logger)
                web.hold(started)
                if let endpointFile { try? endpoint.write(toFile: endpointFile, atomically: true, encoding: .utf8) }
                election?.start()
            }, afterLoop: { web.stop(); election?.stop() })
        } catch {
            logger.critical("stopped by an error: \(error)")
            throw ExitCode.failure
        }
        withExtendedLifetime(signals) {}
        if webFailed { throw ExitCode.failure }
    }
}

/// The running HTTP side, stopped once by whichever comes first: a stop signal or the loop's end.
final class HTTPSideSlot: @unchecked Sendable {
    // @unchecked: `side` and `stopped` are only touched under `lock`.
    private let lock = NSLock()
    private var side: HTTPSide?
    private var stopped = false

    /// Keeps `side`; stops it at once if a stop came before it started.
    func hold(_ side: HTTPSide?) {
        let late = lock.withLock { () -> Bool in
            if stopped { return true }
            self.side = side
            return false
        }
        if late { side?.stop() }
    }

    func stop() {
        let side = lock.withLock { () -> HTTPSide? in
            stopped = true
            defer { self.side = nil }
            return self.side
        }
        side?.stop()
    }
}

extension OpCoord {
    static let defaultHTTP = "127.0.0.1:7601"

    /// Starts the HTTP side (docs/HTTP.md). An explicit --http that cannot listen stops opcoord
    /// (`failed`); the default that cannot (a second coordinator on this host) is only a warning.
    func startHTTP(_ server: CoordinatorServer, token: String?, logger: Logger) -> (side: HTTPSide?, failed: Bool) {
        guard http != "off", let board = server.config.metricsBoard, let inproc = server.config.internalEndpoint else { return (nil, false) }
        let address = http ?? Self.defaultHTTP
        let (host, port) = HTTPSideConfig.parse(address)!
        do {
            let side = try HTTPSide(config: HTTPSideConfig(host: host, port: port, token: token, allowedHosts: httpAllowHost), board: board,
                                    endpoint: inproc, context: server.zmqContext, logger: logger)
            let bound = try side.start()
            logger.info("dashboard and /metrics on http://\(bound)/\(token == nil ? "" : " (token required)")")
            return (side, false)
        } catch {
            if http == nil {
                logger.warning("no dashboard: cannot listen on \(address) (\(error)); give --http HOST:PORT, or --http off")
                return (nil, false)
            }
            logger.critical("cannot start the HTTP side on \(address): \(error)")
            server.stop()
            return (nil, true)
        }
    }

    /// One directory per endpoint under the user's state directory, so coordinators on different ports
    /// of one machine keep apart ("tcp://127.0.0.1:7600" → ".../opqueue/127.0.0.1-7600").
    static func defaultStateDirectory(bind: String) -> String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (NSHomeDirectory() + "/.local/state")
        var slug = bind.hasPrefix("tcp://") ? String(bind.dropFirst(6)) : bind
        slug = String(slug.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" ? $0 : "-" })
        return base + "/opqueue/" + slug
    }
}
